"""An input image as a model of a given depth and channel count reads it (classify, detect,
segment): one rule for every task, said in docs/images.md.

- An 8-bit model given a 16-bit file (PNG or TIFF, grey, colour or N-channel) reads it scaled to
  8 bits, ``round(value * 255 / 65535)``. Pillow alone would clip a 16-bit grey TIFF's values or
  keep a 16-bit colour PNG's high byte (``value // 256``); the file is read at full depth here
  (datasets/deep.py) and scaled once, so every 16-bit kind gets the same answer.
- A 16-bit model given an 8-bit file reads it scaled up exactly (``x 257``: 255 becomes 65535),
  as its dataset's build did (deep.py's `load_array`).
- Anything else reads as it always did: 8-bit L/RGB through images.py, a full-depth model's
  files as arrays at its depth.
"""

from __future__ import annotations

import io
import os

import numpy as np
from PIL import Image

from trainyard.datasets.deep import load_array, load_array_bytes, probe
from trainyard.datasets.images import ImageError, load_image, load_image_bytes, to_pil

__all__ = ["read_8bit_image", "read_input", "to_8bit"]

Source = str | os.PathLike | bytes


def to_8bit(pixels: np.ndarray) -> np.ndarray:
    """uint16 samples as uint8, ``round(value * 255 / 65535)`` (65535 -> 255, 32896 -> 128)."""
    return ((pixels.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)


def read_input(source: Source, channels: int, depth: int) -> Image.Image | np.ndarray:
    """``source`` (a path, or an upload's bytes) as a model with ``depth`` bits and ``channels``
    reads it: an "L"/"RGB" Pillow image for an 8-bit 1- or 3-channel model, else an (H, W, C)
    array of the model's dtype. ImageError (naming why) when it cannot be that."""
    if depth == 8 and channels in (1, 3):
        return read_8bit_image(source, channels)
    if depth == 8 and _is_16bit(source):
        return to_8bit(_array(source, channels, 16))
    return _array(source, channels, depth)


def read_8bit_image(source: Source, channels: int) -> Image.Image:
    """What an 8-bit 1- or 3-channel model reads (every detector and segmenter): an "L" or
    "RGB" image, a 16-bit file scaled to 8 bits; ImageError when unusable."""
    if _is_16bit(source):
        return to_pil(to_8bit(_array(source, channels, 16)))
    return load_image_bytes(source, channels) if isinstance(source, bytes) else load_image(source, channels)


def _array(source: Source, channels: int, depth: int) -> np.ndarray:
    if isinstance(source, bytes):
        return load_array_bytes(source, channels, depth)
    return load_array(source, channels, depth)


def _is_16bit(source: Source) -> bool:
    """Whether the file's header says 16-bit samples; an unreadable one is left to the 8-bit
    reader, whose error says why."""
    try:
        return probe(io.BytesIO(source) if isinstance(source, bytes) else source).depth == 16
    except ImageError:
        return False
