"""Validation computes a detector's backbone once per batch, for its boxes and its loss alike,
and reports the same val_loss and mAP as when both passes computed everything."""

from __future__ import annotations

import pytest
import torch
from detection_helpers import CLASSES, make_detection_dataset

from trainyard.datasets.detection.store import DetectionSplit
from trainyard.networks import create_network, load_network_source
from trainyard.networks.custom_detection import TEMPLATE
from trainyard.networks.detection import label_offset
from trainyard.training.detection import steps
from trainyard.training.detection.data import DetectionBatchLoader

SIZE = 64


@pytest.fixture(scope="module")
def val_split(tmp_path_factory):
    return DetectionSplit(make_detection_dataset(tmp_path_factory.mktemp("shared") / "ds", train=4, val=8,
                                                 size=SIZE) / "val")


def _model(kind: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "template":  # the editor's Faster R-CNN: backbone and RPN head shared
        return load_network_source(TEMPLATE)(len(CLASSES), 3, SIZE)
    return create_network(kind, len(CLASSES), 3, SIZE)  # one-stage: backbone and head shared


def _evaluate(model, split) -> dict[str, float]:
    loader = DetectionBatchLoader(split, 4, label_offset=label_offset(model), prefetch=0)
    model.train()  # as validation finds it, between training steps
    torch.manual_seed(1)  # Faster R-CNN's loss samples its regions: the same draws each time
    return steps.evaluate_detection(model, loader)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["template", "fcos:timm:test_resnet"])
def test_the_backbone_runs_once_a_batch_and_the_figures_stay_the_same(kind, val_split, monkeypatch):
    model = _model(kind)
    calls = []
    # on the backbone's first part: a remembered answer calls the backbone's hooks but computes nothing
    next(model.backbone.children()).register_forward_hook(lambda *_: calls.append(1))
    shared = _evaluate(model, val_split)
    assert len(calls) == 2  # 8 images, batches of 4: once each, for the boxes and the loss

    monkeypatch.setattr(steps, "shared_parts", lambda model: [])  # both passes compute everything
    calls.clear()
    alone = _evaluate(model, val_split)
    assert len(calls) == 4
    assert shared["val_loss"] == pytest.approx(alone["val_loss"], rel=1e-6)
    assert (shared["val_map50"], shared["val_map"]) == (alone["val_map50"], alone["val_map"])
    assert model.training and "forward" not in vars(model.backbone)  # left as it was found


@pytest.mark.slow
def test_under_ddp_the_backbone_still_runs_once_a_batch(val_split, tmp_path):
    """A distributed job's validation calls the detector through DDP: its parts still remember."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        model = _model("template")
        calls = []
        next(model.backbone.children()).register_forward_hook(lambda *_: calls.append(1))
        wrapped = DistributedDataParallel(model)
        loader = DetectionBatchLoader(val_split, 4, label_offset=label_offset(model), prefetch=0)
        wrapped.train()
        figures = steps.evaluate_detection(wrapped, loader)
    finally:
        dist.destroy_process_group()
    assert len(calls) == 2  # 8 images, batches of 4: once each, for the boxes and the loss
    assert 0.0 <= figures["val_map50"] <= 1.0 and figures["val_loss"] > 0
    assert "forward" not in vars(model.backbone)
