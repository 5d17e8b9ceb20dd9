"""Torchvision's detectors on any timm backbone (``fasterrcnn:timm:<model>``, ``retinanet:...``,
``fcos:...``): named, checked and refused like ``timm:`` classifiers, built as detectors that
train and answer boxes, and customised into a file that builds the same detector."""

from __future__ import annotations

import pytest
import torch

from trainyard.networks import UnknownNetwork, create_network, get_network, load_network_source, network_source
from trainyard.networks.table import check_network_name, network_task

HEADS = ("fasterrcnn", "retinanet", "fcos")


def test_a_head_on_a_timm_model_is_a_detection_network():
    info = get_network("retinanet:timm:test_resnet")
    assert info.task == "detection" and "RetinaNet" in info.description and "test_resnet" in info.description
    check_network_name("fcos:timm:resnet10t")
    assert network_task("fasterrcnn:timm:resnet10t") == "detection" and network_task("timm:resnet10t") == \
        "classification"


def test_unknown_heads_and_models_are_refused_with_close_names():
    with pytest.raises(UnknownNetwork, match=r"did you mean fcos:timm:resnet10t"):
        check_network_name("fcos:timm:resnet10tt")
    with pytest.raises(UnknownNetwork, match=r"fasterrcnn:timm:<model>"):
        get_network("yolo:timm:resnet10t")


@pytest.mark.parametrize("head", HEADS)
def test_each_head_trains_and_answers_boxes(head):
    torch.manual_seed(0)
    model = create_network(f"{head}:timm:test_resnet", 2, 3, 64)
    assert type(model.backbone.body).__name__ == "FeatureListNet"  # timm's features_only backbone
    assert model.transform.image_mean == [0.5, 0.5, 0.5]  # the backbone's own normalisation (timm's config)
    target = {"boxes": torch.tensor([[8.0, 8.0, 40.0, 40.0]]), "labels": torch.tensor([model.label_offset + 1])}
    losses = model(torch.rand(2, 3, 64, 64), [target, target])
    loss = sum(losses.values())
    assert torch.isfinite(loss)
    loss.backward()
    assert model.backbone.body.conv1[0].weight.grad is not None  # the loss reaches timm's first layer
    model.eval()
    with torch.no_grad():
        (found,) = model(torch.rand(1, 3, 64, 64))
    assert set(found) == {"boxes", "scores", "labels"}


def test_customize_gives_a_file_that_builds_the_same_detector():
    source = network_source("fcos:timm:test_resnet")
    assert "def build(num_classes, in_channels, image_size):" in source and "trainyard" not in source.split(
        '"""', 2)[2]  # a user's file: torch, torchvision and timm only
    torch.manual_seed(0)
    mine = load_network_source(source)(2, 3, 64)
    torch.manual_seed(0)
    theirs = create_network("fcos:timm:test_resnet", 2, 3, 64)
    assert mine.label_offset == theirs.label_offset == 0
    assert all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), theirs.state_dict().values()))
