"""Image generators shared by the dataset tests (imported by name: tests/datasets is on sys.path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def save_image(path: Path, array: np.ndarray, **save_args) -> Path:
    """Save an (H, W) or (H, W, 3) uint8 array; the format follows the suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, **save_args)
    return path


def random_image(rng: np.random.Generator, height: int = 24, width: int = 40) -> np.ndarray:
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def make_class_tree(root: Path, counts: dict[str, int], seed: int = 0,
                    size: tuple[int, int] = (40, 24)) -> dict[Path, np.ndarray]:
    """Write ``counts[name]`` random PNGs under root/name; return {path: pixels}."""
    rng = np.random.default_rng(seed)
    written = {}
    for name, n in counts.items():
        for i in range(n):
            pixels = random_image(rng, size[1], size[0])
            written[save_image(root / name / f"{name}_{i:03d}.png", pixels)] = pixels
    return written
