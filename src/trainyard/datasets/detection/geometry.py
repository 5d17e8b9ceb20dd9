"""Fit an image to the dataset's size with its boxes: ``pad`` (letterbox) or ``squash``.

pad: one scale ``s = min(W / w, H / h)`` for both axes; the image is resized to
``floor(w * s) x floor(h * s)`` and centred on a WxH canvas of PAD_VALUE, at integer offsets
``pad_x, pad_y``. The resize reads exactly the source window ``w' = rw / s`` (Pillow's ``box``),
so a point maps by ``stored = original * s + pad`` with no rounding, and back by
``original = (stored - pad) / s`` (store.DetectionSplit.to_original). What the floor leaves
out of the source is under one stored pixel at the right and bottom edges.

squash: each axis scaled alone, ``stored_x = x * W / w`` and ``stored_y = y * H / h``, no pad.

Pure arithmetic and Pillow; the decode workers call ``fit_image``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from trainyard.datasets.detection.spec_rules import DETECTION_RESIZE

# Ultralytics' letterbox grey: a detector fine-tuned from one of its models sees the padding it knows.
PAD_VALUE = 114
RESAMPLE = Image.Resampling.BILINEAR
_EPS = 1e-9


@dataclass(frozen=True)
class Fit:
    """How an original w x h image lands in the stored W x H one."""

    scale_x: float
    scale_y: float
    pad_x: int
    pad_y: int
    resized: tuple[int, int]  # (rw, rh): the size of the image content in the stored image
    original: tuple[int, int]  # (w, h)

    def row(self) -> tuple[float, float, float, float, float]:
        """The stored geometry row: scale (x), pad_x, pad_y, original width, original height."""
        return (self.scale_x, float(self.pad_x), float(self.pad_y),
                float(self.original[0]), float(self.original[1]))

    def boxes_to_stored(self, boxes: np.ndarray) -> np.ndarray:
        """(b, 4) boxes in original pixels (inside the image) -> stored pixels.

        Not clipped to the content: an edge at the original's border may land up to one pixel
        into the pad (what the floor left out), so that to_original gives the border back.
        """
        out = np.asarray(boxes, np.float64).reshape(-1, 4).copy()
        out[:, 0::2] = out[:, 0::2] * self.scale_x + self.pad_x
        out[:, 1::2] = out[:, 1::2] * self.scale_y + self.pad_y
        return out.astype(np.float32)


def plan_fit(original: tuple[int, int], width: int, height: int, mode: str) -> Fit:
    """The geometry of fitting an image of ``original`` (w, h) into width x height."""
    w, h = original
    if mode == "squash":
        return Fit(width / w, height / h, 0, 0, (width, height), (w, h))
    if mode != "pad":
        raise ValueError(f"unknown detection resize {mode!r}; valid: {', '.join(DETECTION_RESIZE)}")
    s = min(width / w, height / h)
    rw = min(width, max(1, math.floor(w * s + _EPS)))
    rh = min(height, max(1, math.floor(h * s + _EPS)))
    return Fit(s, s, (width - rw) // 2, (height - rh) // 2, (rw, rh), (w, h))


def fit_image(image: Image.Image, width: int, height: int, mode: str) -> np.ndarray:
    """Resize an "L" or "RGB" image to (height, width, C) uint8 by ``mode`` (pad or squash)."""
    fit = plan_fit(image.size, width, height, mode)
    rw, rh = fit.resized
    if mode == "squash":
        box = (0.0, 0.0, float(image.size[0]), float(image.size[1]))
    else:  # read exactly rw / s source pixels, so the scale is s on both axes
        box = (0.0, 0.0, min(image.size[0], rw / fit.scale_x), min(image.size[1], rh / fit.scale_y))
    kept = image if image.size == (rw, rh) else image.resize((rw, rh), RESAMPLE, box=box)
    pixels = np.asarray(kept, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if (rw, rh) == (width, height):
        return np.ascontiguousarray(pixels)
    out = np.full((height, width, pixels.shape[2]), PAD_VALUE, np.uint8)
    out[fit.pad_y: fit.pad_y + rh, fit.pad_x: fit.pad_x + rw] = pixels
    return out
