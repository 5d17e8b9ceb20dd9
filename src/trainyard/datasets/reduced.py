"""Decode only what a build keeps: JPEGs reduced in libjpeg's DCT domain before the resize.

A 2000x1500 photo resized to 256x256 is decoded at 1/4 or 1/8 of its size (Pillow's
``Image.draft``: libjpeg's scaled IDCT, a fraction of a full decode's work), then resized from
there with DIGITS's plan. The scale is chosen so the reduced image is never smaller than the
plan's resized image (``plan.resized``, before the crop): the resize still only shrinks, by a
factor in 1..2, so the result differs from a full decode by the scaled IDCT's box averaging
instead of the bilinear filter's wider one (measured in tests/datasets/test_reduced_decode.py:
a mean absolute difference around one grey level). Other formats, and reductions under 2x,
decode in full and give exactly the pixels they always did.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
from PIL import Image

from trainyard.datasets.images import EXIF_ORIENTATION, load_image
from trainyard.datasets.resize import resize_image
from trainyard.datasets.resize_plans import plan_resize

_SWAPS_SIDES = {5, 6, 7, 8}  # EXIF orientations that turn the image a quarter


def load_resized(path: str | os.PathLike, channels: int, width: int, height: int, mode: str,
                 rng: np.random.Generator | None = None, reduce: bool = True,
                 before: Callable[[Image.Image], None] | None = None) -> np.ndarray:
    """``resize_image(load_image(path, channels), ...)``, decoding a JPEG reduced when it can.
    ``before`` sees the opened image first (load_image's ``before_load``)."""
    seen: dict[str, tuple[tuple[int, int], int]] = {}

    def draft(img: Image.Image) -> None:
        if before is not None:
            before(img)
        if not reduce or img.format != "JPEG":
            return
        swapped = img.getexif().get(EXIF_ORIENTATION, 1) in _SWAPS_SIDES
        w, h = img.size  # as stored, before the EXIF turn
        upright = (h, w) if swapped else (w, h)
        need = plan_resize(upright, width, height, mode).resized
        need = (need[1], need[0]) if swapped else need
        if w >= 2 * need[0] and h >= 2 * need[1]:
            answer = img.draft(None, need)  # the largest 1/s (s in 1, 2, 4, 8) keeping both sides >= need
            if answer is not None and img.size != (w, h):
                seen["source"] = (upright, round(w / answer[1][2]))

    image = load_image(path, channels, before_load=draft)
    return resize_image(image, width, height, mode, rng, source=seen.get("source"))
