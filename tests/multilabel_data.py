"""Generated multi-label data for tests: 64x64 images with 0-3 of three shapes, a CSV list.

Each image has each of {red_square, blue_circle, green_bar} with probability ``p`` (a label
at most once an image), drawn on a grey noisy background at a random place, so the labels are
learnable from colour alone. Deterministic for a seed.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

LABELS = ("blue_circle", "green_bar", "red_square")


def draw(labels: set[str], rng: np.random.Generator, size: int = 64) -> Image.Image:
    """One image with the shapes of ``labels`` at random places."""
    pixels = np.clip(128 + rng.normal(0, 10, (size, size, 3)), 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels)
    pen = ImageDraw.Draw(image)
    for name in sorted(labels):
        x, y = (int(v) for v in rng.integers(2, size - 22, 2))
        if name == "red_square":
            pen.rectangle((x, y, x + 16, y + 16), fill=(220, 30, 30))
        elif name == "blue_circle":
            pen.ellipse((x, y, x + 18, y + 18), fill=(30, 60, 230))
        else:
            pen.rectangle((x, y, x + 20, y + 6), fill=(30, 200, 50))
    return image


def make_multilabel_set(folder: Path, n: int = 80, seed: int = 0, p: float = 0.45,
                        name: str = "train.csv", separator: str = ";") -> tuple[Path, list[set[str]]]:
    """``n`` PNGs in ``folder/images`` and a CSV list ``folder/name`` (a header row, relative
    paths); (the list, each image's labels)."""
    rng = np.random.default_rng(seed)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    truth = []
    stem = Path(name).stem
    with open(folder / name, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "labels"])
        for i in range(n):
            labels = {label for label in LABELS if rng.random() < p}
            path = f"images/{stem}_{i:03d}.png"
            draw(labels, rng).save(folder / path)
            writer.writerow([path, separator.join(sorted(labels))])
            truth.append(labels)
    return folder / name, truth
