"""Scale jitter on a detection split crops as well as zooms, and the boxes follow the pixels.

A zoom about the centre alone never shows the image's corners at the middle of the frame: a
random window (a crop resized back) does, as detection users expect of "flip, scale, crop".
"""

from __future__ import annotations

import torch

from trainyard.training.augment_settings import AugmentSettings
from trainyard.training.detection.data import _augmentation, _augmented


def _square_image(size: int = 64, box: tuple[int, int, int, int] = (8, 8, 24, 24)) -> tuple[torch.Tensor, dict]:
    x0, y0, x1, y1 = box
    image = torch.zeros(1, 3, size, size)
    image[:, :, y0:y1, x0:x1] = 1.0
    return image, {"boxes": torch.tensor([box], dtype=torch.float32), "labels": torch.tensor([1])}


def test_scale_jitter_crops_anywhere_and_the_box_stays_on_its_shape():
    transform = _augmentation(AugmentSettings(scale_jitter=0.4))
    image, target = _square_image()
    stretch_differs, seen = 0, 0
    for seed in range(40):
        out, targets = _augmented(transform, image, [target], seed)
        boxes = targets[0]["boxes"]
        if len(boxes) == 0:
            continue  # cropped away: allowed, and dropped with its label
        seen += 1
        x0, y0, x1, y1 = boxes[0].round().int().tolist()
        white = out[0, 0] > 0.5
        inside = white[y0:y1, x0:x1].sum().item()
        assert inside >= 0.85 * white.sum().item() > 0, (seed, boxes)  # the box is where the square went
        # About the centre, both axes' offsets from the middle scale by the same zoom; a shift
        # (the crop's window) moves them apart.
        cx, cy = (x0 + x1) / 2 - 32, (y0 + y1) / 2 - 32
        stretch_differs += abs(cx / -16 - cy / -16) > 0.1
    assert seen >= 20 and stretch_differs >= 5, (seen, stretch_differs)
