"""What a person sees of images: the live resize preview of the dataset form (image bytes in,
PNG bytes out), and a stored image as an 8-bit picture (`display_image`: a 16-bit image is
stretched from its own minimum to its maximum, or over a window the user sets, rather than
clipped or left dark)."""

from __future__ import annotations

import io

import numpy as np

from trainyard.datasets.deep import load_array_bytes, probe, resize_array
from trainyard.datasets.images import ImageError, load_image_bytes, png_bytes
from trainyard.datasets.resize import resize_image


def preview_resize(image_bytes: bytes, width: int, height: int, channels: int, mode: str) -> bytes:
    """Load ``image_bytes`` as the build does, resize with ``mode`` and return PNG bytes.

    Raises ImageError for unreadable images and ValueError for an unknown mode. The noise is
    seeded, so the same request always gives the same picture.
    """
    if _is_deep(image_bytes):
        deep = load_array_bytes(image_bytes, channels, 16)
        return png_bytes(display_pixels(resize_array(deep, width, height, mode, np.random.default_rng(0))))
    image = load_image_bytes(image_bytes, channels)
    pixels = resize_image(image, width, height, mode, np.random.default_rng(0))
    return png_bytes(pixels)


def _is_deep(image_bytes: bytes) -> bool:
    try:
        return probe(io.BytesIO(image_bytes)).depth == 16
    except ImageError:
        return False  # the 8-bit path says why it cannot be read


Window = tuple[float, float]  # (lo, hi): the stored values shown as black and as white


def display_pixels(pixels: np.ndarray, window: Window | None = None) -> np.ndarray:
    """A stored (H, W, C) image as uint8 (H, W, 1 or 3) to show (`display_image` without the window)."""
    return display_image(pixels, window)[0]


def display_image(pixels: np.ndarray, window: Window | None = None) -> tuple[np.ndarray, Window | None]:
    """A stored (H, W, C) image as uint8 (H, W, 1 or 3) to show, and the window used (None: none,
    an 8-bit image as it is). An N-channel image shows its first three channels (two: its first, as
    grey). ``window`` maps lo..hi linearly to 0..255, clipping outside; without one a 16-bit
    image is stretched from its own minimum to its maximum (over all channels shown, so colours
    keep their balance) rather than clipped at 255 or left dark."""
    c = pixels.shape[2]
    if c not in (1, 3):
        pixels = pixels[:, :, :3] if c > 3 else pixels[:, :, :1]
    if window is None and pixels.dtype == np.uint8:
        return pixels, None
    lo, hi = window if window is not None else (float(pixels.min()), float(pixels.max()))
    scaled = (pixels.astype(np.float32) - lo) * (255.0 / (hi - lo if hi > lo else 1.0))
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8), (lo, hi)
