"""Refuse a build the disk cannot hold, before it writes anything.

Encoding ``none`` stores exactly N * H * W * C bytes (plus small labels and mean files); PNG
and JPEG are estimated from a sample of the images, decoded, resized and encoded as the build
would. At 256x256, ``none`` is 192 KiB an image: 252 GB for ImageNet's 1.28 M images, where
JPEG takes a tenth of that, so the refusal proposes ``--encoding jpeg`` with its estimate.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trainyard.core.errors import UserError
from trainyard.core.formatting import byte_size
from trainyard.datasets.decode_worker import Geometry, process_chunk

SAMPLE = 16  # images encoded to estimate an encoded build's size
MARGIN = 1.1  # estimates of encoded sizes vary: keep a tenth more free
RESERVE = 256 << 20  # and room for the rest of the system to go on writing


class DiskFull(UserError):
    """The destination has not the room the build needs."""


def sample_bytes(paths: list[str], geometry: Geometry, encoding: str) -> float | None:
    """The mean encoded size of ``paths`` (None if none of them could be read)."""
    g = Geometry(geometry.width, geometry.height, geometry.channels, geometry.resize, encoding)
    sizes = [len(encoded) for _, encoded, reason in process_chunk(g, [(p, (0,)) for p in paths])
             if reason is None and encoded is not None]
    return float(np.mean(sizes)) if sizes else None


def estimate(images: int, geometry: Geometry, sample: Callable[[str], float | None], encoding: str) -> int:
    """Bytes the images of a build take with ``encoding`` (``sample`` gives an encoded mean)."""
    if encoding == "none":
        return images * geometry.image_bytes
    mean = sample(encoding)
    return int(images * (mean if mean is not None else geometry.image_bytes) * MARGIN)


def check_room(dest: Path, images: int, geometry: Geometry, sample_paths: list[str],
               free: Callable[[Path], int] = lambda p: shutil.disk_usage(p).free) -> int:
    """The estimated size of the build; DiskFull when ``dest``'s file system cannot hold it."""
    cache: dict[str, float | None] = {}

    def sample(encoding: str) -> float | None:
        if encoding not in cache:
            cache[encoding] = sample_bytes(sample_paths, geometry, encoding)
        return cache[encoding]

    need = estimate(images, geometry, sample, geometry.encoding)
    room = free(dest)
    if need + RESERVE <= room:
        return need
    if geometry.encoding == "jpeg":
        advice = "free some space, or choose a smaller --size"
    else:
        jpeg = estimate(images, geometry, sample, "jpeg")
        advice = f"use --encoding jpeg (about {byte_size(jpeg)}) or free some space"
    raise DiskFull(f"{images} images at {geometry.width}x{geometry.height} with --encoding {geometry.encoding} "
                   f"need about {byte_size(need)} but {dest} has {byte_size(room)} free; {advice}")


def spread(count: int, k: int = SAMPLE) -> np.ndarray:
    """``k`` indices spread evenly over ``range(count)``."""
    return np.unique(np.linspace(0, max(0, count - 1), num=min(k, count)).astype(np.int64))
