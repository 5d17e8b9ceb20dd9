"""A custom detection network checked as training runs it: the template builds, a wrong layer
names its layer and the line that made it, a broken contract says what was expected."""

from __future__ import annotations

import pytest

from trainyard.networks import check_network_isolated
from trainyard.networks.check import run_check
from trainyard.networks.custom_detection import TEMPLATE


def detection_check(source: str, num_classes: int = 2, size: int = 64) -> dict:
    return run_check({"source": source, "num_classes": num_classes, "in_channels": 3, "image_size": size,
                      "task": "detection"})


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_the_editor_template_is_a_detector_that_checks_and_draws():
    answer = detection_check(TEMPLATE)
    assert answer["ok"] is True, answer
    assert answer["task"] == "detection" and answer["output_shape"] is None  # boxes, not one tensor
    names = {layer["name"]: layer for layer in answer["layers"]}
    assert names["backbone.0"]["type"] == "Conv2d" and names["backbone.0"]["output_shape"] == [32, 32, 32]
    assert "roi_heads.box_predictor.cls_score" in names  # the heads are listed too
    assert names["roi_heads.box_predictor.cls_score"]["settings"] == "256→3, bias=True"  # 2 classes + background


def test_a_wrong_layer_in_the_backbone_points_at_the_line_that_defines_it():
    source = TEMPLATE.replace("nn.Conv2d(32, 64, 3", "nn.Conv2d(16, 64, 3")
    answer = detection_check(source)
    assert answer["ok"] is False
    assert answer["line"] == line_of(source, "nn.Conv2d(16, 64, 3")
    assert answer["error"] == (f"line {answer['line']}: layer 'backbone.3' (Conv2d) expects 16 input channels, "
                               "gets 32")


def test_a_classifier_on_a_detection_dataset_is_told_the_contract():
    source = TEMPLATE.replace("    model.label_offset = 1\n    return model",
                              "    return nn.Sequential(backbone, nn.AdaptiveAvgPool2d(1))")
    answer = detection_check(source)
    assert answer["ok"] is False and answer["line"] is None
    assert answer["error"] == ("a detector's forward must take (images, targets) in training mode: "
                               "Sequential.forward takes (input); is it a classifier?")


def test_losses_that_are_not_a_dict_are_told_the_contract():
    source = TEMPLATE + '''

class Summed(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, images, targets=None):
        out = self.inner(images, targets)
        return sum(out.values()) if self.training else out


_build = build


def build(num_classes, in_channels, image_size):
    return Summed(_build(num_classes, in_channels, image_size))
'''
    answer = detection_check(source)
    assert answer["ok"] is False
    assert answer["error"] == ("in training mode model(images, targets) must return a dict of losses "
                               "{name: scalar tensor}, not a tensor of shape ()")


def test_eval_answers_without_scores_are_refused():
    source = TEMPLATE + '''

class NoScores(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, images, targets=None):
        out = self.inner(images, targets)
        return out if self.training else [{"boxes": o["boxes"], "labels": o["labels"]} for o in out]


_build = build


def build(num_classes, in_channels, image_size):
    return NoScores(_build(num_classes, in_channels, image_size))
'''
    answer = detection_check(source)
    assert answer["ok"] is False
    assert "in eval mode model(images) must return a list of 2 dicts" in answer["error"]
    assert "keys ['boxes', 'labels']" in answer["error"]


def test_a_detector_checked_for_a_classification_dataset_is_told_to_use_a_detection_one():
    answer = run_check({"source": TEMPLATE, "num_classes": 2, "in_channels": 3, "image_size": 64})
    assert answer["ok"] is False and "train it on a detection dataset" in answer["error"]


@pytest.mark.slow
def test_the_sandboxed_check_of_a_detector():
    source = TEMPLATE.replace("nn.Conv2d(64, 128, 3", "nn.Conv2d(60, 128, 3")
    answer = check_network_isolated(source, 2, 3, 64, task="detection")
    assert answer["ok"] is False and answer["line"] == line_of(source, "nn.Conv2d(60, 128, 3")
    assert "'backbone.6' (Conv2d) expects 60 input channels, gets 64" in answer["error"]
    assert check_network_isolated(TEMPLATE, 2, 3, 64, task="detection")["ok"] is True
