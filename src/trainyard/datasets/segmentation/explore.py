"""A stored segmentation split for the dataset page's explorer: a page of its images, each with
the classes its mask holds, and one image with its mask laid over it.

``label`` filters to the images whose mask holds at least one pixel of that class (what the
build's ``counts`` count). The overlay is at the stored size, the pixels the explorer shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from trainyard.core.document import Document
from trainyard.datasets.preview import display_pixels
from trainyard.datasets.segmentation.overlay import IGNORE, overlay_pixels
from trainyard.datasets.segmentation.store import TASK, SegmentationSplit


class MaskedImage(Document):
    index: int
    label: int  # how many classes its mask holds
    labels: list[int]  # those classes' indices


class MaskPage(Document):
    split: str
    total: int
    offset: int
    width: int  # the stored size, the overlay's
    height: int
    images: list[MaskedImage]


def is_segmentation_split(split_dir: Path) -> bool:
    try:
        return json.loads((Path(split_dir) / "meta.json").read_text()).get("task") == TASK
    except (FileNotFoundError, ValueError):
        return False


def classes_in(mask: np.ndarray) -> list[int]:
    """The class indices a mask holds (255, ignore, is no class)."""
    return [int(c) for c in np.unique(mask) if c != IGNORE]


def image_page(split_dir: Path, label: int | None, offset: int, limit: int) -> MaskPage:
    """The images ``offset`` .. ``offset + limit`` of the split (of those holding ``label``)."""
    split = SegmentationSplit(split_dir)
    if label is None:
        indices = np.arange(len(split))
    else:
        indices = np.flatnonzero(np.asarray([np.any(mask == label) for mask in split.masks], bool))
    images = []
    for i in (int(i) for i in indices[offset: offset + limit]):
        held = classes_in(split.masks[i])
        images.append(MaskedImage(index=i, label=len(held), labels=held))
    return MaskPage(split=Path(split_dir).name, total=len(indices), offset=offset,
                    width=split.width, height=split.height, images=images)


def overlay_image(split_dir: Path, index: int, opacity: float) -> np.ndarray:
    """(H, W, 3) uint8: stored image ``index`` (IndexError if there is none) with its mask over it."""
    split = SegmentationSplit(split_dir)
    if not 0 <= index < len(split):
        raise IndexError(f"{split.folder.name} has {len(split)} images; no image {index}")
    pixels = display_pixels(split.reader.read(index))
    return overlay_pixels(pixels, np.asarray(split.masks[index]), opacity)
