"""Flower-like photos for the README tour's test: daisies, sunflowers and tulips on blurred,
noisy grounds of varying colour, at a random place and size. Told apart by shape and colour
together (a yellow tulip against a sunflower), not by a flat colour, as a user's photos are."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

KINDS = ("daisy", "sunflower", "tulip")
TULIP_COLOURS = [(200, 30, 40), (230, 110, 160), (240, 200, 20), (120, 40, 150)]


def _tulip(draw: ImageDraw.ImageDraw, colour, cx: float, cy: float, r: float) -> None:
    """A cup with three points on a stem."""
    draw.line([(cx, cy), (cx, cy + 2.2 * r)], fill=(40, 120, 40), width=max(2, int(r / 6)))
    draw.ellipse([cx - 0.7 * r, cy - 0.9 * r, cx + 0.7 * r, cy + 0.7 * r], fill=colour)
    points = [(-0.7, -0.2), (-0.45, -1.3), (-0.1, -0.5), (0.1, -1.3), (0.35, -0.5), (0.7, -1.2), (0.7, -0.2)]
    draw.polygon([(cx + x * r, cy + y * r) for x, y in points], fill=colour)


def _radial(draw: ImageDraw.ImageDraw, kind: str, turn: float, cx: float, cy: float, r: float) -> None:
    """Round petals about a centre: a daisy's white about a small yellow one, a sunflower's
    yellow about a big brown one."""
    petal, centre, petals, centre_share = (((245, 245, 240), (230, 190, 30), 12, 0.3) if kind == "daisy"
                                           else ((240, 200, 20), (90, 55, 20), 18, 0.55))
    for k in range(petals):
        angle = turn + 2 * math.pi * k / petals
        px, py = cx + 0.65 * r * math.cos(angle), cy + 0.65 * r * math.sin(angle)
        draw.ellipse([px - 0.3 * r, py - 0.3 * r, px + 0.3 * r, py + 0.3 * r], fill=petal)
    c = centre_share * r
    draw.ellipse([cx - c, cy - c, cx + c, cy + c], fill=centre)


def make_flowers(root: Path, per_class: int = 50, seed: int = 0, size: tuple[int, int] = (160, 120)) -> Path:
    """``root/<kind>/<kind>_<i>.jpg``, ``per_class`` JPEGs of each kind; ``root``."""
    rng = np.random.default_rng(seed)
    width, height = size
    for kind in KINDS:
        (root / kind).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            ground = rng.uniform(40, 140, 3) * np.array([0.6, 1.0, 0.5])
            pixels = (ground + rng.normal(0, 25, (height, width, 3))).clip(0, 255).astype(np.uint8)
            image = Image.fromarray(pixels).filter(ImageFilter.GaussianBlur(1.5))
            draw = ImageDraw.Draw(image)
            r = rng.uniform(0.15, 0.3) * height
            cx, cy = rng.uniform(r, width - r), rng.uniform(r, height - r)
            if kind == "tulip":
                _tulip(draw, TULIP_COLOURS[rng.integers(len(TULIP_COLOURS))], cx, cy, r)
            else:
                _radial(draw, kind, rng.uniform(0, math.pi), cx, cy, r)
            image.save(root / kind / f"{kind}_{i}.jpg", quality=85)
    return root
