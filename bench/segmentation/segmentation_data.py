"""bench/segmentation/segmentation.py's generated set: squares, discs and triangles on cluttered noise, overlapping.

Each image is smoothed colour noise crossed by random lines and sprinkled with small blobs (the
clutter: background, class 0), with 1 to 4 filled shapes of random colours drawn over it, later
shapes over earlier ones (so objects overlap and cut each other). A shape's colour says nothing
of its class: only its outline does, as in the issue's scale point (issue 43, item 6). Masks are
8-bit index PNGs named by their image's stem: 0 background, 1 square, 2 disc, 3 triangle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

CLASSES = ("background", "square", "disc", "triangle")


def _clutter(rng: np.random.Generator, size: int) -> Image.Image:
    """Smoothed noise with lines and small blobs: texture the network must learn to ignore."""
    noise = rng.integers(0, 256, (size // 4, size // 4, 3), dtype=np.uint8)
    image = Image.fromarray(noise).resize((size, size), Image.Resampling.BICUBIC)
    pen = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 8))):
        points = [tuple(int(v) for v in rng.integers(0, size, 2)) for _ in range(2)]
        pen.line(points, fill=tuple(int(v) for v in rng.integers(0, 256, 3)), width=int(rng.integers(1, 3)))
    for _ in range(int(rng.integers(4, 12))):
        x, y = (int(v) for v in rng.integers(0, size, 2))
        r = int(rng.integers(1, max(2, size // 24)))
        pen.ellipse((x - r, y - r, x + r, y + r), fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    return image.filter(ImageFilter.GaussianBlur(0.6))


def _shape(pen: ImageDraw.ImageDraw, kind: int, x: int, y: int, r: int, colour) -> None:
    if kind == 1:
        pen.rectangle((x - r, y - r, x + r, y + r), fill=colour)
    elif kind == 2:
        pen.ellipse((x - r, y - r, x + r, y + r), fill=colour)
    else:
        pen.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=colour)


def draw(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """One (size, size, 3) uint8 image and its (size, size) uint8 mask."""
    image = _clutter(rng, size)
    mask = Image.new("L", (size, size), 0)
    pen, marks = ImageDraw.Draw(image), ImageDraw.Draw(mask)
    for _ in range(int(rng.integers(1, 5))):
        kind = int(rng.integers(1, len(CLASSES)))
        r = int(rng.integers(size // 8, size // 4))
        x, y = (int(v) for v in rng.integers(r, size - r, 2))
        _shape(pen, kind, x, y, r, tuple(int(v) for v in rng.integers(0, 256, 3)))
        _shape(marks, kind, x, y, r, kind)
    return np.asarray(image, np.uint8), np.asarray(mask, np.uint8)


def write_split(folder: Path, n: int, size: int, seed: int) -> tuple[Path, Path]:
    """(images, masks) folders of ``n`` drawn pairs under ``folder``."""
    images, masks = folder / "images", folder / "masks"
    images.mkdir(parents=True, exist_ok=True)
    masks.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        image, mask = draw(rng, size)
        Image.fromarray(image).save(images / f"{i:04d}.png")
        Image.fromarray(mask, mode="L").save(masks / f"{i:04d}.png")
    return images, masks


def read_split(images: Path, masks: Path) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W, 3) images and (N, H, W) masks of a written split, in file order."""
    names = sorted(p.name for p in images.glob("*.png"))
    return (np.stack([np.asarray(Image.open(images / n).convert("RGB")) for n in names]),
            np.stack([np.asarray(Image.open(masks / n)) for n in names]))
