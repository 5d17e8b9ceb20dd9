"""One COCO ``segmentation`` checked, then rasterised by pycocotools.

A segmentation is a list of polygons (``[[x1, y1, x2, y2, ...], ...]``), an uncompressed RLE
(``{"counts": [n, ...], "size": [h, w]}``) or a compressed one (``counts`` a string). pycocotools'
C code trusts its input: a run-length total past ``h * w`` writes past the mask, a polygon of
four numbers is taken for a box, a coordinate of 1e30 asks for an unbounded buffer. So each shape
is checked here first, and one that fails is a ``MalformedShape`` for the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pycocotools import mask as coco_mask

MAX_DIGITS = 13  # 5-bit digits of one compressed count: 65 bits, past any count of an image


class MalformedShape(ValueError):
    """A segmentation that cannot be rasterised safely, and why."""


@dataclass(frozen=True)
class Rle:
    """A run-length encoding whose runs were checked to cover its image exactly."""

    counts: list[int] | str  # uncompressed runs, or pycocotools' compressed string of them
    height: int
    width: int

    def pycocotools(self) -> object:
        """The RLE as pycocotools takes it (a compressed one, however it came)."""
        rle = {"size": [self.height, self.width], "counts": self.counts}
        return coco_mask.frPyObjects(rle, self.height, self.width) if isinstance(self.counts, list) else rle


Shape = list[list[float]] | Rle  # polygons, or an RLE with its counts checked


def checked_shape(segmentation: object, height: int, width: int) -> Shape:
    """``segmentation`` made safe to rasterise at ``height`` x ``width``; MalformedShape if not."""
    if isinstance(segmentation, list):
        return _polygons(segmentation, height, width)
    if isinstance(segmentation, dict):
        return _rle(segmentation, height, width)
    raise MalformedShape(f"segmentation is neither polygons nor an RLE: {str(segmentation)[:60]!r}")


def rasterise(shape: Shape, height: int, width: int) -> np.ndarray:
    """The (h, w) bool mask of a shape ``checked_shape`` returned."""
    rle = shape.pycocotools() if isinstance(shape, Rle) else coco_mask.merge(
        coco_mask.frPyObjects(shape, height, width))
    return np.asarray(coco_mask.decode(rle), bool)


def _polygons(polygons: list, height: int, width: int) -> list[list[float]]:
    if not polygons:
        raise MalformedShape("segmentation is an empty list of polygons")
    out = []
    for number, polygon in enumerate(polygons, 1):
        if not isinstance(polygon, list) or len(polygon) < 6 or len(polygon) % 2:
            raise MalformedShape(f"polygon {number} is not a list of at least 3 x, y points")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in polygon):
            raise MalformedShape(f"polygon {number} holds a value that is not a finite number")
        # A point well outside the image is no slip of a pixel: refused, so the rasteriser's
        # buffer (the outline's length in pixels) stays the image's order of size.
        xs, ys = polygon[0::2], polygon[1::2]
        if min(xs) < -width or max(xs) > 2 * width or min(ys) < -height or max(ys) > 2 * height:
            raise MalformedShape(f"polygon {number} reaches far outside the {width}x{height} image")
        out.append([float(v) for v in polygon])
    return out


def _rle(rle: dict, height: int, width: int) -> Rle:
    size, raw = rle.get("size"), rle.get("counts")
    if size != [height, width]:
        raise MalformedShape(f"RLE size {str(size)[:40]} is not the image's [{height}, {width}]")
    counts: list[int] | str
    if isinstance(raw, str):
        counts, runs = raw, _compressed_counts(raw)
    elif isinstance(raw, list) and all(type(n) is int for n in raw):
        counts = runs = list(raw)
    else:
        raise MalformedShape("RLE counts are neither a string nor a list of whole numbers")
    if any(n < 0 for n in runs) or sum(runs) != height * width:
        raise MalformedShape(f"RLE runs cover {sum(runs)} pixels, the image {height * width}")
    return Rle(counts, height, width)


def _compressed_counts(text: str) -> list[int]:
    """The runs of a compressed RLE string (pycocotools' rleFrString, without its trust)."""
    runs: list[int] = []
    p = 0
    while p < len(text):
        value = digits = 0
        more = True
        while more:
            if p >= len(text) or digits >= MAX_DIGITS:
                raise MalformedShape("RLE counts string ends inside a number")
            c = ord(text[p]) - 48
            if not 0 <= c < 64:
                raise MalformedShape(f"RLE counts string holds {text[p]!r}")
            value |= (c & 0x1F) << (5 * digits)
            more = bool(c & 0x20)
            p += 1
            digits += 1
            if not more and c & 0x10:
                value |= -1 << (5 * digits)  # a negative delta
        if len(runs) > 2:
            value += runs[-2]  # runs past the second are stored as deltas from the one two back
        runs.append(value)
    return runs
