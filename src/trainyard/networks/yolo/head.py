"""The YOLO family's head: decoupled box and class branches per level, boxes as distributions.

Anchor-free: every cell of each level is one candidate, centred on the cell. The box branch
predicts, for each side (left, top, right, bottom), a distribution over ``REG_MAX`` bins of the
distance from the cell's centre in strides (Distribution Focal Loss, Li et al. 2020); its
expectation is the distance. The class branch gives one logit per class (sigmoid, no background).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .blocks import ConvBNAct

REG_MAX = 16  # bins per side: distances up to 15 strides
STRIDES = (8, 16, 32)


class Head(nn.Module):
    """Features [P3, P4, P5] -> (box logits (N, A, 4*REG_MAX), class logits (N, A, C)), A the cells."""

    def __init__(self, num_classes: int, channels: tuple[int, ...]):
        super().__init__()
        box_c = max(16, channels[0] // 4, REG_MAX * 4)
        cls_c = max(channels[0], min(num_classes, 100))
        self.box = nn.ModuleList(nn.Sequential(ConvBNAct(c, box_c, 3), ConvBNAct(box_c, box_c, 3),
                                               nn.Conv2d(box_c, 4 * REG_MAX, 1)) for c in channels)
        self.cls = nn.ModuleList(nn.Sequential(ConvBNAct(c, cls_c, 3), ConvBNAct(cls_c, cls_c, 3),
                                               nn.Conv2d(cls_c, num_classes, 1)) for c in channels)
        self.num_classes = num_classes
        self._init_biases()

    def _init_biases(self) -> None:
        """Start with every class improbable (a prior of 1 %, as focal-loss detectors do), so the
        first steps are not spent pushing down thousands of background cells."""
        for branch in self.cls:
            nn.init.constant_(_output_bias(branch), -math.log((1 - 0.01) / 0.01))
        for branch in self.box:
            nn.init.constant_(_output_bias(branch), 1.0)

    def forward(self, features: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        boxes, classes = [], []
        for x, box, cls in zip(features, self.box, self.cls):
            boxes.append(box(x).flatten(2))
            classes.append(cls(x).flatten(2))
        return torch.cat(boxes, 2).transpose(1, 2), torch.cat(classes, 2).transpose(1, 2)


def cell_centres(features: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(centres (A, 2) x, y in pixels, strides (A, 1)) of every cell of every level, in order."""
    points, strides = [], []
    for x, stride in zip(features, STRIDES):
        h, w = x.shape[-2:]
        ys = (torch.arange(h, device=x.device, dtype=torch.float32) + 0.5) * stride
        xs = (torch.arange(w, device=x.device, dtype=torch.float32) + 0.5) * stride
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        points.append(torch.stack([gx, gy], -1).reshape(-1, 2))
        strides.append(torch.full((h * w, 1), float(stride), device=x.device))
    return torch.cat(points), torch.cat(strides)


def distances(box_logits: torch.Tensor) -> torch.Tensor:
    """Box logits (N, A, 4*REG_MAX) -> expected distances (N, A, 4) ltrb, in strides."""
    probs = box_logits.unflatten(-1, (4, REG_MAX)).softmax(-1)
    bins = torch.arange(REG_MAX, device=box_logits.device, dtype=probs.dtype)
    return probs @ bins


def to_boxes(ltrb: torch.Tensor, centres: torch.Tensor, strides: torch.Tensor) -> torch.Tensor:
    """Distances in strides (N, A, 4) around the cell centres -> x1, y1, x2, y2 in pixels."""
    ltrb = ltrb * strides
    return torch.cat([centres - ltrb[..., :2], centres + ltrb[..., 2:]], -1)


def _output_bias(branch: nn.Module) -> torch.Tensor:
    """The bias of a head branch's output convolution (the last of its Sequential)."""
    last = list(branch.children())[-1]
    assert isinstance(last, nn.Conv2d) and last.bias is not None
    return last.bias
