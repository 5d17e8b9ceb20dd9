"""Live preview of a resize mode for the dataset form: image bytes in, PNG bytes out."""

from __future__ import annotations

import numpy as np

from trainyard.datasets.images import load_image_bytes, png_bytes
from trainyard.datasets.resize import resize_image


def preview_resize(image_bytes: bytes, width: int, height: int, channels: int, mode: str) -> bytes:
    """Load ``image_bytes`` as the build does, resize with ``mode`` and return PNG bytes.

    Raises ImageError for unreadable images and ValueError for an unknown mode. The noise is
    seeded, so the same request always gives the same picture.
    """
    image = load_image_bytes(image_bytes, channels)
    pixels = resize_image(image, width, height, mode, np.random.default_rng(0))
    return png_bytes(pixels)
