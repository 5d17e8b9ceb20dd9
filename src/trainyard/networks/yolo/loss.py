"""The YOLO family's training loss: soft BCE for classes, CIoU and DFL for boxes.

Targets come from task-aligned assignment (assign.py). Each term is normalised by the sum of the
soft class targets, so its scale does not depend on how many objects a batch has; the gains are
the usual ones for this family of heads (box 7.5, class 0.5, DFL 1.5).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torchvision.ops import complete_box_iou_loss

from .assign import assign
from .head import REG_MAX, distances, to_boxes

GAINS = {"loss_box": 7.5, "loss_classifier": 0.5, "loss_dfl": 1.5}


def padded_targets(targets: list[dict[str, torch.Tensor]], device: torch.device
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-image targets as (boxes (B, M, 4), labels (B, M), mask (B, M)), M the most objects."""
    most = max((len(t["labels"]) for t in targets), default=0)
    boxes = torch.zeros((len(targets), most, 4), device=device)
    labels = torch.zeros((len(targets), most), dtype=torch.long, device=device)
    mask = torch.zeros((len(targets), most), dtype=torch.bool, device=device)
    for i, t in enumerate(targets):
        n = len(t["labels"])
        boxes[i, :n], labels[i, :n], mask[i, :n] = t["boxes"].to(device), t["labels"].to(device), True
    return boxes, labels, mask


def _dfl(box_logits: torch.Tensor, target_ltrb: torch.Tensor) -> torch.Tensor:
    """Distribution focal loss: cross-entropy on the two bins either side of each true distance,
    weighted by nearness, (P, 4*REG_MAX) logits and (P, 4) distances -> (P,)."""
    t = target_ltrb.clamp(0, REG_MAX - 1 - 0.01)
    left = t.floor().long()
    w_left = left + 1 - t
    logits = box_logits.reshape(-1, REG_MAX)
    ce_left = F.cross_entropy(logits, left.flatten(), reduction="none").view_as(t)
    ce_right = F.cross_entropy(logits, (left + 1).flatten(), reduction="none").view_as(t)
    return (ce_left * w_left + ce_right * (1 - w_left)).mean(-1)


def yolo_loss(box_logits: torch.Tensor, cls_logits: torch.Tensor, centres: torch.Tensor,
              strides: torch.Tensor, targets: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The three weighted losses of one batch (labels in ``targets`` are class indices)."""
    box_logits, cls_logits = box_logits.float(), cls_logits.float()
    pred_boxes = to_boxes(distances(box_logits), centres, strides)
    gt_boxes, gt_labels, gt_mask = padded_targets(targets, cls_logits.device)
    target_boxes, target_scores, fg = assign(cls_logits.detach().sigmoid(), pred_boxes.detach(), centres,
                                             gt_boxes, gt_labels, gt_mask)
    total = target_scores.sum().clamp(min=1.0)
    cls = F.binary_cross_entropy_with_logits(cls_logits, target_scores, reduction="sum") / total
    weight = target_scores.sum(-1)[fg]
    if fg.any():
        box = (complete_box_iou_loss(pred_boxes[fg], target_boxes[fg], reduction="none") * weight).sum() / total
        centre = centres.expand_as(pred_boxes[..., :2])[fg]
        stride = strides.expand(fg.shape[0], -1, -1)[fg]
        target_ltrb = torch.cat([centre - target_boxes[fg][:, :2], target_boxes[fg][:, 2:] - centre], -1) / stride
        dfl = (_dfl(box_logits[fg], target_ltrb) * weight).sum() / total
    else:  # no objects: the box terms are zero but stay in the graph (DDP needs every parameter used)
        box = dfl = box_logits.sum() * 0.0
    losses = {"loss_box": box, "loss_classifier": cls, "loss_dfl": dfl}
    return {k: v * GAINS[k] for k, v in losses.items()}
