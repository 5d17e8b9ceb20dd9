"""The numbers a detection dataset's page shows, computed once at build time into info.json.

``counts`` (split -> class -> images that hold at least one box of the class: what a
classification page's counts are, images per class), ``box_counts`` (split -> class ->
boxes), ``empty_images`` (split -> images with no box) and ``box_sizes``: a histogram of the
boxes' size, sqrt(width * height) in stored pixels, on doubling bins, plus COCO's
small / medium / large (area under 32², 96², above) per split.
"""

from __future__ import annotations

import numpy as np

COUNTS_MEANING = {"counts": "images holding at least one box of the class",
                  "box_counts": "boxes of the class", "empty_images": "images with no box"}
COCO_AREAS = (32**2, 96**2)


def size_edges(width: int, height: int) -> list[float]:
    """0, 4, 8, 16, ... up to the first power of two at or above the image's diagonal-free side."""
    edges = [0.0, 4.0]
    while edges[-1] < max(width, height):
        edges.append(edges[-1] * 2)
    return edges


def class_counts(classes: list[str], labels: np.ndarray, offsets: np.ndarray) -> tuple[dict, dict, int]:
    """(images per class, boxes per class, images with no box) of one split."""
    n_images = len(offsets) - 1
    boxes = np.bincount(labels, minlength=len(classes)) if len(labels) else np.zeros(len(classes), int)
    image_of = np.repeat(np.arange(n_images), np.diff(offsets))
    pairs = np.unique(np.stack([image_of, labels]), axis=1) if len(labels) else np.zeros((2, 0), int)
    images = np.bincount(pairs[1], minlength=len(classes)) if pairs.shape[1] else np.zeros(len(classes), int)
    empty = int(np.sum(np.diff(offsets) == 0))
    return (dict(zip(classes, images.tolist(), strict=True)), dict(zip(classes, boxes.tolist(), strict=True)),
            empty)


def box_sizes(boxes_by_split: dict[str, np.ndarray], width: int, height: int) -> dict:
    """The size histogram and COCO size classes of each split's (M, 4) stored boxes."""
    edges = size_edges(width, height)
    hist, coco = {}, {}
    for split, boxes in boxes_by_split.items():
        b = np.asarray(boxes, np.float64).reshape(-1, 4)
        area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        hist[split] = np.histogram(np.sqrt(area), bins=edges)[0].tolist()
        coco[split] = {"small": int(np.sum(area < COCO_AREAS[0])),
                       "medium": int(np.sum((area >= COCO_AREAS[0]) & (area < COCO_AREAS[1]))),
                       "large": int(np.sum(area >= COCO_AREAS[1]))}
    bins = [f"{lo:g}-{hi:g}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return {"measure": "sqrt(width * height) in stored pixels", "edges": edges, "bins": bins, "counts": hist,
            "by_bin": {split: dict(zip(bins, values, strict=True)) for split, values in hist.items()},
            "coco_areas": coco}
