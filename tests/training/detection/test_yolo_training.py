"""Training the YOLO family with its recipe: mosaic keeps boxes on their objects, the weights'
moving average is saved and resumed exactly, yolo_n learns the shapes through a real job, and
its ONNX graph answers as PyTorch does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from detection_helpers import detection_spec, make_detection_dataset

from tests.detection_model import _build
from trainyard.jobs.views.documents import job_detail
from trainyard.networks.table import get_network
from trainyard.training.detection.mosaic import mosaic_batch
from trainyard.training.train_settings import TrainSettings


def _squares(n: int, h: int = 48, w: int = 64) -> tuple[torch.Tensor, list[dict[str, torch.Tensor]]]:
    """Black images with one white rectangle each, at a different place, and its box."""
    x = torch.zeros(n, 3, h, w)
    targets = []
    for i in range(n):
        x1, y1 = 4 + 3 * i, 6 + 2 * i
        x[i, :, y1:y1 + 20, x1:x1 + 24] = 1.0
        targets.append({"boxes": torch.tensor([[x1, y1, x1 + 24, y1 + 20]], dtype=torch.float32),
                        "labels": torch.tensor([i % 2])})
    return x, targets


def test_mosaic_moves_every_box_with_its_pixels():
    x, targets = _squares(6)
    out, moved = mosaic_batch(x, targets, 1.0, torch.Generator().manual_seed(3))
    assert out.shape == x.shape
    for image, target in zip(out, moved):
        covered = torch.zeros(image.shape[1:], dtype=torch.bool)
        for x1, y1, x2, y2 in target["boxes"].round().long().tolist():
            inner = image[0, y1 + 1:y2 - 1, x1 + 1:x2 - 1]
            assert inner.numel() and inner.mean() > 0.9  # the box is on white
            covered[max(y1 - 1, 0):y2 + 1, max(x1 - 1, 0):x2 + 1] = True
        white = image[0] > 0.5
        # unlabelled white: only slivers of objects the window cut to under a fifth
        assert (white & ~covered).sum() <= 0.25 * white.sum()
    assert sum(len(t["boxes"]) for t in moved) > len(targets)  # four images in one: more objects


def test_the_recipe_is_valid_training_settings():
    settings = TrainSettings(**get_network("yolo_n").recipe_settings())
    assert settings.ema > 0 and settings.augment.mosaic == 1.0 and settings.lr.policy == "cosine"


def test_resume_with_a_weight_average_is_exact(tmp_path):
    from model_helpers import train_and_resume

    data = make_detection_dataset(tmp_path / "ds", train=24, val=8, size=64)
    recipe = get_network("yolo_n").recipe_settings()
    spec = detection_spec(data, network="yolo_n", epochs=2, snapshot_interval=1, **recipe)
    full, resumed = train_and_resume(spec, tmp_path, at=1, compared=("train_loss", "val_loss", "val_map"))
    assert full["ema_updates"] == resumed["ema_updates"] > 0
    for key in ("model", "trained_model"):
        for name, tensor in full[key].items():
            assert torch.equal(resumed[key][name], tensor), (key, name)
    assert any(not torch.equal(full["model"][n], t) for n, t in full["trained_model"].items())


@pytest.mark.slow
def test_yolo_n_learns_the_shapes_through_a_real_job(tmp_path):
    settings = {**get_network("yolo_n").recipe_settings(), "epochs": 25, "batch_size": 16, "seed": 1,
                "snapshot_interval": 0}
    trained = _build(tmp_path, n_images=128, settings=settings, network="yolo_n")
    doc = job_detail(trained.ctx.manager, trained.ctx.store.get_job(trained.model_id)).as_json()
    assert doc["status"] == "done" and doc["best"]["val_map50"] > 0.6
    assert max(v for _, v in doc["metrics"]["val_map"]) > 0.3


def test_onnx_export_of_yolo_answers_as_pytorch():
    from trainyard.inference.detection.onnx_graph import check_detector, export_detector
    from trainyard.networks.yolo import yolo_n

    torch.manual_seed(0)
    model = yolo_n(2, 3, 64).eval()
    for branch in model.head.cls:  # scores near 0.73: many boxes above the check's cut-off (0.5)
        torch.nn.init.ones_(branch[-1].bias)
    onnx = export_detector(model, (3, 48, 64))
    rng = np.random.default_rng(0)
    report = check_detector(onnx, model, [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(2)])
    assert report["boxes_compared"] > 0 and report["max_box_diff"] <= 0.05
