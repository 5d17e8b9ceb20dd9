"""Task-aligned assignment (TOOD, Feng et al. 2021): which cells learn which object, and how much.

For each object, every cell whose centre lies inside its box gets an alignment score,
``class score ** ALPHA * IoU ** BETA`` (how well the cell already classifies *and* locates it),
and the TOP_K best-aligned cells become its positives. A cell claimed by several objects keeps
the one it overlaps most. The positives' class targets are soft: the alignment, rescaled so the
object's best cell gets that cell's IoU; so classification scores learn to rank by box quality.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torchvision.ops import box_iou

TOP_K, ALPHA, BETA = 10, 0.5, 6.0
EPS = 1e-9


def _pairwise_iou(gt: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """IoU of each object (B, M, 4) with each cell's predicted box (B, A, 4): (B, M, A)."""
    return torch.stack([box_iou(g, p) for g, p in zip(gt, pred)]).clamp_(0)


def _inside(centres: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
    """(B, M, A): whether cell centre a lies strictly inside object m's box."""
    c = centres[None, None]  # (1, 1, A, 2)
    g = gt[:, :, None]  # (B, M, 1, 4)
    margins = torch.cat([c - g[..., :2], g[..., 2:] - c], -1)
    return margins.amin(-1) > EPS


@torch.no_grad()
def assign(scores: torch.Tensor, pred_boxes: torch.Tensor, centres: torch.Tensor, gt_boxes: torch.Tensor,
           gt_labels: torch.Tensor, gt_mask: torch.Tensor
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Targets for every cell: (boxes (B, A, 4), soft class scores (B, A, C), foreground (B, A)).

    ``scores`` are the sigmoid class scores (B, A, C), ``pred_boxes`` the decoded boxes in pixels,
    ``gt_*`` the objects padded to M per image with ``gt_mask`` saying which are real."""
    b, a, c = scores.shape
    if gt_boxes.shape[1] == 0:
        return torch.zeros_like(pred_boxes), torch.zeros_like(scores), torch.zeros((b, a), dtype=torch.bool,
                                                                                   device=scores.device)
    candidates = _inside(centres, gt_boxes) & gt_mask[..., None]  # (B, M, A)
    iou = _pairwise_iou(gt_boxes, pred_boxes) * candidates
    cls = scores.transpose(1, 2).gather(1, gt_labels[..., None].expand(-1, -1, a))  # (B, M, A)
    align = cls.pow(ALPHA) * iou.pow(BETA) * candidates
    top = align.topk(min(TOP_K, a), dim=-1).indices
    chosen = torch.zeros_like(candidates).scatter_(-1, top, True) & candidates
    # A cell chosen by several objects keeps the one it overlaps most
    claimed = chosen.sum(1, keepdim=True) > 1  # (B, 1, A)
    best = F.one_hot(iou.argmax(1), chosen.shape[1]).transpose(1, 2).bool()  # (B, M, A)
    chosen = torch.where(claimed, best & candidates, chosen)
    foreground = chosen.any(1)  # (B, A)
    owner = chosen.float().argmax(1)  # (B, A): the object index of each cell
    target_boxes = gt_boxes.gather(1, owner[..., None].expand(-1, -1, 4))
    target_labels = gt_labels.gather(1, owner)
    align = align * chosen
    norm = align * (iou * chosen).amax(-1, keepdim=True) / (align.amax(-1, keepdim=True) + EPS)
    weight = norm.amax(1)  # (B, A)
    target_scores = F.one_hot(target_labels, c).float() * (weight * foreground)[..., None]
    return target_boxes, target_scores, foreground
