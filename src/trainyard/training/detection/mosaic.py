"""Mosaic for detection batches: four training images in one, their boxes with them.

Each image of a batch becomes, with probability ``p``, a window of a 2 x 2 mosaic of itself and
three other images of the same batch (drawn at random), resized back to the batch's size. The
window's side is ``k`` times the image's, ``k`` uniform in 1..2 (objects shown at 1/k of their
size: from the native size down to half, all four images whole), and it lies anywhere in the
mosaic: objects appear at new sizes, positions and company, and cut at the seams, which is why
detectors trained with it generalise better (YOLOv4, Bochkovskiy et al. 2020). It is usually
switched off for the last part of training, so the model ends on images as they are.

The whole batch is cropped and resized in one ``torchvision.ops.roi_align`` call. Random draws
come from a generator seeded by the caller, so a resumed run sees the same mosaics.
"""

from __future__ import annotations

import torch
from torchvision.ops import roi_align

MIN_VISIBLE = 0.2  # a box cut to less than this fraction of its area by the window is dropped
MIN_SIDE = 2.0  # pixels, after resizing


def _canvas(x: torch.Tensor, partners: torch.Tensor) -> torch.Tensor:
    """(N, C, 2H, 2W): image i top-left, its three partners top-right, bottom-left, bottom-right."""
    a, b, c, d = x, x[partners[:, 0]], x[partners[:, 1]], x[partners[:, 2]]
    return torch.cat([torch.cat([a, b], 3), torch.cat([c, d], 3)], 2)


def _boxes_in_window(targets: list[dict[str, torch.Tensor]], members: list[int], window: torch.Tensor,
                     size: tuple[int, int]) -> dict[str, torch.Tensor]:
    """The members' boxes moved into the mosaic, then into the resized window; cut ones dropped."""
    h, w = size
    offsets = ((0, 0), (w, 0), (0, h), (w, h))
    boxes = torch.cat([targets[m]["boxes"] + boxes_offset(dx, dy) for m, (dx, dy) in zip(members, offsets)])
    labels = torch.cat([targets[m]["labels"] for m in members])
    x0, y0, x1, y1 = window.tolist()
    scale = torch.tensor([w / (x1 - x0), h / (y1 - y0)] * 2)
    moved = (boxes - torch.tensor([x0, y0, x0, y0])) * scale
    clipped = torch.stack([moved[:, 0].clamp(0, w), moved[:, 1].clamp(0, h),
                           moved[:, 2].clamp(0, w), moved[:, 3].clamp(0, h)], 1)
    area = lambda b: (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)  # noqa: E731
    keep = (area(clipped) >= MIN_VISIBLE * area(moved)) & ((clipped[:, 2:] - clipped[:, :2]) >= MIN_SIDE).all(1)
    return {"boxes": clipped[keep], "labels": labels[keep]}


def boxes_offset(dx: float, dy: float) -> torch.Tensor:
    return torch.tensor([dx, dy, dx, dy], dtype=torch.float32)


def mosaic_batch(x: torch.Tensor, targets: list[dict[str, torch.Tensor]], p: float, generator: torch.Generator
                 ) -> tuple[torch.Tensor, list[dict[str, torch.Tensor]]]:
    """The batch with each image a mosaic window with probability ``p`` (targets on the host)."""
    n, _, h, w = x.shape
    if n < 2 or p <= 0:
        return x, targets
    chosen = torch.rand(n, generator=generator) < p
    partners = (torch.arange(n)[:, None] + torch.randint(1, n, (n, 3), generator=generator)) % n
    k = 1 + torch.rand(n, generator=generator)
    left = torch.rand(n, generator=generator) * (2 - k) * w
    top = torch.rand(n, generator=generator) * (2 - k) * h
    windows = torch.stack([left, top, left + k * w, top + k * h], 1)
    rois = torch.cat([torch.arange(n, dtype=torch.float32)[:, None], windows], 1)[chosen]
    if not len(rois):
        return x, targets
    mixed = roi_align(_canvas(x, partners.to(x.device)), rois.to(x), (h, w), 1.0, sampling_ratio=2, aligned=True)
    out, out_targets = x.clone(), list(targets)
    for j, i in enumerate(chosen.nonzero().flatten().tolist()):
        out[i] = mixed[j]
        members = [i, *partners[i].tolist()]
        out_targets[i] = _boxes_in_window(targets, members, windows[i], (h, w))
    return out, out_targets
