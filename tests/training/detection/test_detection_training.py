"""Training a detector: it learns, reports mAP through the usual events, and refuses mismatches.

The shared detector (tests/detection_model.py) trains through a real dataset job and a real
model job; these tests read what that run recorded. A wrong-box model (every true box moved
by its own width) scores the baseline the trained one must be well above.
"""

from __future__ import annotations

import numpy as np
import pytest
from detection_helpers import detection_spec, make_detection_dataset

from tests.detection_model import EPOCHS, SNAPSHOT
from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.artifact.detection_metrics import mean_average_precision
from trainyard.core.paths import checkpoint_name
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.jobs.views.documents import job_detail
from trainyard.training.spec import ModelSpec


def _shifted(boxes: np.ndarray, size: int) -> np.ndarray:
    """Each box moved right (or left, at the edge) by its own width: the wrong place."""
    out = boxes.copy()
    width = out[:, 2] - out[:, 0]
    right = out[:, 2] + width <= size
    out[:, 0::2] += np.where(right, width, -width)[:, None]
    return out


def test_the_detector_learns_the_shapes_well_above_a_wrong_box_baseline(detector):
    doc = job_detail(detector.ctx.manager, detector.ctx.store.get_job(detector.model_id)).as_json()
    assert doc["task"] == "detection" and doc["status"] == "done"
    best = doc["best"]
    assert {key for key, value in best.items() if value is not None} == {"epoch", "val_map50"}  # no accuracy
    assert best["val_map50"] == max(v for _, v in doc["metrics"]["val_map50"])

    val = DetectionSplit(detector.dataset_dir / "val")
    truth = [dict(zip(("boxes", "labels"), val.targets(i))) for i in range(len(val))]
    wrong = [{"boxes": _shifted(t["boxes"], val.width), "scores": np.ones(len(t["labels"])),
              "labels": t["labels"]} for t in truth]
    baseline = mean_average_precision(wrong, truth)["map50"]
    assert baseline < 0.1
    assert best["val_map50"] > 0.5 > baseline + 0.3


def test_metrics_are_lists_of_epoch_value_with_each_loss(detector):
    metrics = job_detail(detector.ctx.manager, detector.ctx.store.get_job(detector.model_id)).as_json()["metrics"]
    assert [e for e, _ in metrics["val_map50"]] == list(range(1, EPOCHS + 1))
    assert all(0 <= v <= 1 for _, v in metrics["val_map50"] + metrics["val_map"])
    assert all(m <= m50 for (_, m), (_, m50) in zip(metrics["val_map"], metrics["val_map50"]))
    # SSDlite's two losses, each reported beside their sum
    assert {"train_loss", "train_bbox_regression_loss", "train_classification_loss", "val_loss"} <= set(metrics)
    first, last = metrics["train_loss"][0][1], metrics["train_loss"][-1][1]
    assert last < first


def test_checkpoints_describe_a_detector(detector):
    ckpt = load_checkpoint(detector.ctx.manager.folder(detector.model_id).checkpoints / checkpoint_name(SNAPSHOT))
    assert ckpt["task"] == "detection"
    assert ckpt["classes"] == ["disc", "square"]  # the dataset sorts its class names
    assert ckpt["preprocess"]["resize"] == "pad" and ckpt["preprocess"]["mean_mode"] == "none"
    assert "val_map50" in ckpt["best"]


def test_a_detection_network_refuses_a_classification_dataset_and_the_reverse(tmp_path):
    with pytest.raises(ValueError, match="detection network"):
        ModelSpec(dataset_id="d", dataset_dir=str(tmp_path), network="ssdlite320_mobilenet_v3_large")
    with pytest.raises(ValueError, match="classification network"):
        ModelSpec(dataset_id="d", dataset_dir=str(tmp_path), network="lenet", task="detection")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return make_detection_dataset(tmp_path_factory.mktemp("small") / "ds", train=24, val=8, size=64)


@pytest.mark.slow
def test_resume_continues_exactly(small, tmp_path):
    from model_helpers import train_and_resume

    spec = detection_spec(small, epochs=2, snapshot_interval=1, augment={"flip": "lr", "scale_jitter": 0.1})
    full, resumed = train_and_resume(spec, tmp_path, at=1,
                                     compared=("train_loss", "val_loss", "val_map50", "val_map"))
    for name, tensor in full["model"].items():
        assert (resumed["model"][name] == tensor).all(), name
