"""A page of a stored detection split for the dataset page's explorer: each image with its boxes.

``label`` filters to the images holding at least one box of that class (what ``counts``
counts). Boxes are in stored pixels, the pixels the explorer shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from trainyard.datasets.detection.store import TASK, DetectionSplit


def is_detection_split(split_dir: Path) -> bool:
    try:
        return json.loads((Path(split_dir) / "meta.json").read_text()).get("task") == TASK
    except (FileNotFoundError, ValueError):
        return False


def images_holding(split: DetectionSplit, label: int) -> np.ndarray:
    """Indices of the images with at least one box of class ``label``, in order."""
    image_of = np.repeat(np.arange(len(split)), np.diff(split.box_offsets))
    return np.unique(image_of[split.box_labels == label])


def image_page(split_dir: Path, label: int | None, offset: int, limit: int) -> dict:
    """{split, total, offset, width, height, images: [{index, label (boxes), boxes: [...]}]}."""
    split = DetectionSplit(split_dir)
    indices = np.arange(len(split)) if label is None else images_holding(split, label)
    images = []
    for i in (int(i) for i in indices[offset: offset + limit]):
        boxes, labels = split.targets(i)
        images.append({"index": i, "label": len(boxes),
                       "boxes": [{"label": int(c), "box": [round(float(v), 2) for v in b]}
                                 for b, c in zip(boxes, labels, strict=True)]})
    return {"split": Path(split_dir).name, "total": len(indices), "offset": offset,
            "width": split.width, "height": split.height, "images": images}
