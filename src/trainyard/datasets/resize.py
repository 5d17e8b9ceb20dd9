"""Resize an image to a dataset's geometry with DIGITS's resize modes (squash, crop, fill,
half_crop): the plan (datasets/resize_plans.py, where the geometry is explained) applied to
pixels with Pillow and numpy. Interpolation is bilinear, DIGITS's default; padding is uniform
noise in 0..254.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from trainyard.datasets.resize_plans import plan_resize

RESAMPLE = Image.Resampling.BILINEAR


def resize_image(
    image: Image.Image,
    width: int,
    height: int,
    mode: str,
    rng: np.random.Generator | None = None,
    source: tuple[tuple[int, int], int] | None = None,
) -> np.ndarray:
    """Resize an "L" or "RGB" image to a uint8 array of shape (height, width, C), C = 1 or 3.

    ``rng`` draws the noise of fill and half_crop (a fresh unseeded one if None). ``source``
    ((w, h), s): ``image`` is a 1/s reduced decode of a w x h image (JPEG draft); the plan is
    the full image's (DIGITS's rounding depends on it), the pixels come from the reduced one.
    """
    if image.mode not in ("L", "RGB"):
        raise ValueError(f"resize_image expects an 'L' or 'RGB' image, not {image.mode!r}")
    full, scale = source if source is not None else (image.size, 1)
    plan = plan_resize(full, width, height, mode)
    x0, y0, x1, y1 = plan.crop
    if scale == 1 and image.size == (x1 - x0, y1 - y0) and plan.resized == image.size:
        kept = image  # already the right size: no resampling at all
    else:
        # Resizing only the source box that maps to the kept window gives the same pixels as
        # DIGITS's resize-then-crop (Pillow clamps filters at the source edges either way)
        # without building a huge intermediate for extreme aspect ratios.
        # A reduced decode maps full-image x to x / scale (libjpeg's scaled IDCT).
        sx, sy = full[0] / plan.resized[0] / scale, full[1] / plan.resized[1] / scale
        box = (x0 * sx, y0 * sy, x1 * sx, y1 * sy)
        kept = image.resize((x1 - x0, y1 - y0), RESAMPLE, box=box)
    pixels = np.asarray(kept, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.shape[:2] == (height, width):
        return np.ascontiguousarray(pixels)
    rng = rng if rng is not None else np.random.default_rng()
    out = rng.integers(0, 255, size=(height, width, pixels.shape[2]), dtype=np.uint8)
    ox, oy = plan.offset
    out[oy : oy + pixels.shape[0], ox : ox + pixels.shape[1]] = pixels
    return out
