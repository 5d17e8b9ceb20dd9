"""Torchvision's Faster R-CNN, RetinaNet or FCOS on a timm backbone, through a feature pyramid.

The backbone is timm's ``features_only`` model (its stages' outputs, the classifier gone), the
neck torchvision's ``FeaturePyramidNetwork`` over its last stages, and the head torchvision's, with
anchors sized from the stages' strides as torchvision sizes them for its ResNet-50 detectors:
Faster R-CNN takes the last four stages and a max-pooled level (anchors 8 x stride), RetinaNet and
FCOS the last three and P6/P7 (anchors 4 x stride at three scales; FCOS one point a stride). The
detector normalises its input with the backbone's own mean and std (timm's config of the model).

This file needs only torch, torchvision and timm: a network's "Customize" file is this text with
a ``build`` that calls `build_detector` (timm_detection.py), so it is also what a user edits.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import timm
import torch
from torch import nn
from torchvision.models import detection
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.ops import FeaturePyramidNetwork, MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool, LastLevelP6P7

PYRAMID_CHANNELS = 256  # torchvision's FPN width
# head -> (stages it takes from the backbone's end, label of the dataset's class 0)
HEADS = {"fasterrcnn": (4, 1), "retinanet": (3, 0), "fcos": (3, 0)}


class TimmPyramid(nn.Module):
    """timm's stage outputs -> torchvision's FPN: the backbone every torchvision detector takes
    (a module with ``out_channels`` answering an OrderedDict of feature maps)."""

    def __init__(self, body: Any, stages: list[int], extra: nn.Module):  # Any: timm's FeatureListNet
        super().__init__()
        self.body, self.stages = body, stages
        channels = body.feature_info.channels()
        self.fpn = FeaturePyramidNetwork([channels[i] for i in stages], PYRAMID_CHANNELS, extra_blocks=extra)
        self.out_channels = PYRAMID_CHANNELS

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        features = self.body(x)
        return self.fpn(OrderedDict((str(k), features[i]) for k, i in enumerate(self.stages)))


def build_detector(head: str, model: str, num_classes: int, image_size: int) -> nn.Module:
    """``head`` (fasterrcnn, retinanet, fcos) on timm's ``model``, randomly initialised, for
    ``num_classes`` classes (without background) at ``image_size``."""
    taken, offset = HEADS[head]
    body: Any = timm.create_model(model, pretrained=False, features_only=True)
    strides = body.feature_info.reduction()
    stages = list(range(len(strides)))[-taken:]
    extra = LastLevelMaxPool() if head == "fasterrcnn" else LastLevelP6P7(PYRAMID_CHANNELS, PYRAMID_CHANNELS)
    backbone = TimmPyramid(body, stages, extra)
    levels = [strides[i] for i in stages] + ([strides[-1] * 2] if head == "fasterrcnn"
                                             else [strides[-1] * 2, strides[-1] * 4])
    cfg: dict = body.pretrained_cfg or {}
    common = {"min_size": image_size, "max_size": image_size,
              "image_mean": list(cfg.get("mean") or (0.485, 0.456, 0.406)),
              "image_std": list(cfg.get("std") or (0.229, 0.224, 0.225))}
    classes = num_classes + offset
    if head == "fasterrcnn":
        anchors = AnchorGenerator(tuple((8 * s,) for s in levels), ((0.5, 1.0, 2.0),) * len(levels))
        pool = MultiScaleRoIAlign([str(k) for k in range(len(stages))], output_size=7, sampling_ratio=2)
        detector: Any = detection.FasterRCNN(backbone, classes, rpn_anchor_generator=anchors,
                                                   box_roi_pool=pool, **common)
    elif head == "retinanet":
        anchors = AnchorGenerator(tuple((4 * s, round(4 * s * 2 ** (1 / 3)), round(4 * s * 2 ** (2 / 3)))
                                        for s in levels), ((0.5, 1.0, 2.0),) * len(levels))
        detector = detection.RetinaNet(backbone, classes, anchor_generator=anchors, **common)
    else:
        anchors = AnchorGenerator(tuple((s,) for s in levels), ((1.0,),) * len(levels))
        detector = detection.FCOS(backbone, classes, anchor_generator=anchors, **common)
    detector.label_offset = offset
    return detector
