"""A YOLO-class detector with torchvision's detection interface, so trainyard trains and serves it
like its other detectors.

Training mode: ``model(images, targets)`` -> the dict of weighted losses. Eval mode:
``model(images)`` -> one ``{"boxes", "scores", "labels"}`` per image, boxes x1, y1, x2, y2 in the
input's pixels. ``images`` is a (N, C, H, W) batch in 0..1 or a list of (C, H, W) images; they
are padded (bottom and right, with zeros) to a multiple of the largest stride, so any size
trains, and the boxes are clipped to each image's own size. No background class:
``label_offset`` is 0. ``backbone`` (body and neck) and ``head`` are the parts validation's two
passes share (training/detection/shared_parts.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torchvision.ops import batched_nms

from .blocks import Body
from .head import STRIDES, Head, cell_centres, distances, to_boxes
from .loss import yolo_loss

SCORE_THRESH = 0.001  # keep low scores: mAP ranks them; the user's --threshold cuts later
NMS_IOU = 0.7
PRE_NMS, DETECTIONS = 1000, 300


class YoloDetector(nn.Module):
    """Body (CSP backbone + PAN neck), decoupled DFL head, task-aligned loss, NMS."""

    label_offset = 0

    def __init__(self, num_classes: int, in_channels: int = 3, width: float = 0.25, depth: float = 0.33,
                 max_channels: int = 1024):
        super().__init__()
        self.backbone = Body(in_channels, width, depth, max_channels)
        self.head = Head(num_classes, self.backbone.channels)
        self.num_classes = num_classes

    def forward(self, images: torch.Tensor | list[torch.Tensor], targets: list[dict[str, torch.Tensor]] | None = None
                ) -> dict[str, torch.Tensor] | list[dict[str, torch.Tensor]]:
        batch, sizes = _batch(images)
        features = self.backbone(batch)
        box_logits, cls_logits = self.head(features)
        centres, strides = cell_centres(features)
        if self.training:
            if targets is None:
                raise ValueError("a detector in training mode needs targets")
            return yolo_loss(box_logits, cls_logits, centres, strides, targets)
        boxes = to_boxes(distances(box_logits.float()), centres, strides)
        return [_detections(b, s, size) for b, s, size in zip(boxes, cls_logits.float().sigmoid(), sizes)]


def _batch(images: torch.Tensor | list[torch.Tensor]) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """One padded (N, C, H', W') batch with H', W' multiples of the largest stride, and each
    image's own (H, W)."""
    if isinstance(images, torch.Tensor):
        h, w = images.shape[-2:]
        sizes = [(h, w)] * len(images)
        batch = images
    else:
        sizes = [(int(im.shape[-2]), int(im.shape[-1])) for im in images]
        h, w = max(s[0] for s in sizes), max(s[1] for s in sizes)
        batch = torch.stack([F.pad(im, (0, w - im.shape[-1], 0, h - im.shape[-2])) for im in images])
    step = STRIDES[-1]
    return F.pad(batch, (0, -int(w) % step, 0, -int(h) % step)), sizes


def _detections(boxes: torch.Tensor, scores: torch.Tensor, size: tuple[int, int]) -> dict[str, torch.Tensor]:
    """One image's final boxes: every (cell, class) pair above SCORE_THRESH, the best PRE_NMS of
    them, per-class NMS, the best DETECTIONS kept."""
    flat = scores.flatten()
    top = flat.topk(min(PRE_NMS, flat.numel())).indices
    top = top[flat[top] > SCORE_THRESH]
    cell, label = top // scores.shape[1], top % scores.shape[1]
    h, w = size
    found = boxes[cell]
    found = torch.stack([found[:, 0].clamp(0, w), found[:, 1].clamp(0, h),
                         found[:, 2].clamp(0, w), found[:, 3].clamp(0, h)], 1)
    keep = batched_nms(found, flat[top], label, NMS_IOU)[:DETECTIONS]
    return {"boxes": found[keep], "scores": flat[top][keep], "labels": label[keep]}
