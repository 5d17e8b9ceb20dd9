"""A hard generated detection set for bench/detection/detection_yolo.py: what separates a good detector.

Five classes told apart by shape alone (their colours are random), each drawn at varied sizes
(6 to 60 % of the short side) and aspect ratios (1:2 to 2:1), one to six an image, overlapping
allowed; on textured backgrounds (a colour gradient, sinusoidal stripes, noise and blurred
blotches) with unlabelled distractors (lines, arcs, small dots, half-drawn outlines) that share
the objects' colours. Boxes are exact: each shape's drawn extent. Deterministic from a seed.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

CLASSES = ("square", "disc", "triangle", "cross", "ring")


def _background(rng: np.random.Generator, w: int, h: int) -> Image.Image:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = rng.uniform(40, 200, 3)
    slope = rng.uniform(-0.6, 0.6, (2, 3))
    image = base + xx[..., None] * slope[0] + yy[..., None] * slope[1]
    angle, period = rng.uniform(0, np.pi), rng.uniform(4, 20)
    stripes = np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * 2 * np.pi / period)
    image += stripes[..., None] * rng.uniform(5, 35, 3)
    image += rng.normal(0, rng.uniform(3, 14), (h, w, 3))
    pil = Image.fromarray(np.clip(image, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(pil)
    for _ in range(rng.integers(2, 7)):  # blotches
        x, y, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(5, 30)
        draw.ellipse([x - r, y - r * rng.uniform(0.5, 1.5), x + r, y + r], fill=tuple(rng.integers(0, 256, 3)))
    return pil.filter(ImageFilter.GaussianBlur(rng.uniform(1.5, 4)))


def _distractors(draw: ImageDraw.ImageDraw, rng: np.random.Generator, w: int, h: int) -> None:
    for _ in range(rng.integers(2, 7)):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        kind = rng.integers(4)
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        if kind == 0:
            draw.line([x, y, rng.uniform(0, w), rng.uniform(0, h)], fill=colour, width=int(rng.integers(1, 4)))
        elif kind == 1:
            r = rng.uniform(6, 25)
            draw.arc([x - r, y - r, x + r, y + r], rng.uniform(0, 180), rng.uniform(200, 300), fill=colour, width=2)
        elif kind == 2:
            r = rng.uniform(1, 3)
            draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)
        else:  # two sides of a square: an object's corner, unlabelled
            s = rng.uniform(8, 25)
            draw.line([x, y, x + s, y, x + s, y + s], fill=colour, width=2)


def _shape(draw: ImageDraw.ImageDraw, label: str, box: tuple[float, float, float, float], colour: tuple,
           rng: np.random.Generator) -> None:
    x1, y1, x2, y2 = box
    if label == "square":
        draw.rectangle(box, fill=colour)
    elif label == "disc":
        draw.ellipse(box, fill=colour)
    elif label == "triangle":
        draw.polygon([((x1 + x2) / 2, y1), (x2, y2), (x1, y2)], fill=colour)
    elif label == "cross":
        tx, ty = (x2 - x1) / 6, (y2 - y1) / 6
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        draw.rectangle([cx - tx, y1, cx + tx, y2], fill=colour)
        draw.rectangle([x1, cy - ty, x2, cy + ty], fill=colour)
    else:  # ring
        draw.ellipse(box, outline=colour, width=max(2, int(min(x2 - x1, y2 - y1) / 5)))


def _covered(box: tuple, over: tuple) -> float:
    """The fraction of ``box``'s area that ``over`` covers."""
    w = max(0.0, min(box[2], over[2]) - max(box[0], over[0]))
    h = max(0.0, min(box[3], over[3]) - max(box[1], over[1]))
    return w * h / ((box[2] - box[0]) * (box[3] - box[1]))


def draw_set(count: int, width: int = 160, height: int = 120, seed: int = 0
             ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """``count`` images (H, W, 3) uint8, their boxes (n, 4) x1 y1 x2 y2 float32 and labels (n,) int64."""
    rng = np.random.default_rng(seed)
    images, boxes, labels = [], [], []
    for _ in range(count):
        pil = _background(rng, width, height)
        draw = ImageDraw.Draw(pil)
        _distractors(draw, rng, width, height)
        found, kinds = [], []
        for _ in range(rng.integers(1, 7)):
            side = rng.uniform(0.06, 0.6) * min(width, height)
            aspect = np.exp(rng.uniform(np.log(0.5), np.log(2.0)))
            bw, bh = max(side * np.sqrt(aspect), 5), max(side / np.sqrt(aspect), 5)
            x1, y1 = rng.uniform(0, width - bw), rng.uniform(0, height - bh)
            if any(_covered(earlier, (x1, y1, x1 + bw, y1 + bh)) > 0.4 for earlier in found):
                continue  # it would hide most of an object drawn before it: its label would lie
            kind = int(rng.integers(len(CLASSES)))
            colour = tuple(int(c) for c in rng.integers(0, 256, 3))
            _shape(draw, CLASSES[kind], (x1, y1, x1 + bw, y1 + bh), colour, rng)
            found.append((x1, y1, x1 + bw, y1 + bh))
            kinds.append(kind)
        images.append(np.asarray(pil, np.uint8))
        boxes.append(np.array(found, np.float32).reshape(-1, 4))
        labels.append(np.array(kinds, np.int64))
    return images, boxes, labels
