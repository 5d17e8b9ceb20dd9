"""Generated segmentation data: squares and discs on noise, with their index-PNG masks.

``make_segmentation_set(folder, n)`` writes ``images/i.png`` (RGB noise with a square, class 1,
and a disc, class 2, of fixed colours: learnable from the pixels) and ``masks/i.png`` (an 8-bit
index PNG: 0 background, 1 square, 2 disc). Every tenth mask is a palette PNG, which reads as its
indices too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = ["background", "square", "disc"]
COLOURS = {1: (220, 40, 40), 2: (40, 60, 220)}


def shapes(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """One (size, size, 3) uint8 image and its (size, size) uint8 mask."""
    image = rng.integers(0, 160, (size, size, 3), dtype=np.uint8)
    mask = np.zeros((size, size), np.uint8)
    yy, xx = np.mgrid[:size, :size]
    side = int(rng.integers(size // 5, size // 3))
    x, y = (int(v) for v in rng.integers(0, size - side, 2))
    mask[y:y + side, x:x + side] = 1
    r = int(rng.integers(size // 8, size // 5))
    cx, cy = (int(v) for v in rng.integers(r, size - r, 2))
    mask[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = 2
    for index, colour in COLOURS.items():
        image[mask == index] = colour
    return image, mask


def save_mask(path: Path, mask: np.ndarray, palette: bool = False) -> None:
    img = Image.fromarray(mask, mode="L")
    if palette:
        img = img.convert("P")
        img.putpalette([0, 0, 0, 255, 0, 0, 0, 0, 255] + [128] * (253 * 3))
    img.save(path)


def make_segmentation_set(folder: Path, n: int, size: int = 64, seed: int = 0) -> tuple[Path, Path]:
    """(images folder, masks folder) of ``n`` generated pairs."""
    images, masks = folder / "images", folder / "masks"
    images.mkdir(parents=True, exist_ok=True)
    masks.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        image, mask = shapes(rng, size)
        Image.fromarray(image).save(images / f"{i:03d}.png")
        save_mask(masks / f"{i:03d}.png", mask, palette=i % 10 == 9)
    return images, masks


def create_dataset(home: Path, data: Path, *options: str) -> tuple[dict, Path]:
    """(the JSON document, the dataset folder) of ``trainyard dataset create --task segmentation``
    with ``options``, run in-process with ``home`` and the data root ``data``; fails the test when
    the command fails."""
    import json

    from typer.testing import CliRunner

    from trainyard.cli.main import app
    from trainyard.core.paths import JobFolder

    env = {"TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "formats", "--task", "segmentation",
                                      *options, "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return doc, JobFolder(home / "jobs" / doc["id"]).dataset


def stored_masks(dataset: Path, split: str) -> np.ndarray:
    """The (N, H, W) uint8 masks a built dataset stored for ``split``, in stored order."""
    from trainyard.datasets.segmentation.store import SegmentationSplit

    stored = SegmentationSplit(dataset / split)
    return stored.mask_batch(np.arange(len(stored)))


def reasons(doc: dict) -> dict[str, str]:
    """The dataset's report: each skipped path's last part -> its reason."""
    return {Path(s["path"]).name: s["reason"] for s in doc["skipped"]}
