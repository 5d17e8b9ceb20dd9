"""The stored segmentation split: the classification split's images plus one mask per image.

A segmentation split folder is a classification split folder (datasets/storage.py: ``meta.json``
with ``"task": "segmentation"``, ``images.u8`` or ``images.bin`` + ``offsets.npy``) plus
``masks.npy``: uint8 (N, H, W), each pixel its class's index (0-based, as ``labels.txt``), 255 =
ignore, at the stored images' size (resized with nearest neighbour, so no index is invented).
``labels.npy`` holds the number of classes present in each mask (not a class), for shared code.
Torch-free: readers run anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import SplitReader

TASK = "segmentation"
MASKS = "masks.npy"


class SegmentationSplitWriter:
    """Streams one segmentation split: images to the classification writer, masks kept in memory
    (a uint8 per stored pixel) and saved on ``close``."""

    def __init__(self, folder: Path, height: int, width: int, channels: int, encoding: str = "none",
                 mean: bool = False):
        self.images = SplitWriter(Path(folder), height, width, channels, encoding, mean=mean)
        self._masks: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.images)

    def append(self, image: np.ndarray, mask: np.ndarray) -> None:
        """Add one stored image (H, W, C) with its mask (H, W) of class indices."""
        if mask.shape != image.shape[:2]:
            raise ValueError(f"mask {mask.shape} does not fit image {image.shape[:2]}")
        present = np.unique(mask[mask != 255])
        self.images.append(image, len(present))
        self._masks.append(np.ascontiguousarray(mask, np.uint8))

    def masks(self) -> np.ndarray:
        h, w, _ = self.images.shape
        return np.stack(self._masks) if self._masks else np.zeros((0, h, w), np.uint8)

    def mean(self) -> np.ndarray | None:
        return self.images.mean()

    def close(self) -> None:
        self.images.close()
        folder = self.images.folder
        np.save(folder / MASKS, self.masks())
        meta_path = folder / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["task"] = TASK
        meta_path.write_text(json.dumps(meta, indent=2))


class SegmentationSplit:
    """Random access to one stored segmentation split: images in batches, masks by index."""

    def __init__(self, split_dir: str | Path):
        self.folder = Path(split_dir)
        meta = json.loads((self.folder / "meta.json").read_text())
        if meta.get("task") != TASK:
            raise ValueError(f"{self.folder} is not a segmentation split (task {meta.get('task')!r})")
        self.reader = SplitReader(self.folder)
        self.height, self.width, self.channels = self.reader.shape
        self.masks: np.ndarray = np.load(self.folder / MASKS, mmap_mode="r")

    def __len__(self) -> int:
        return len(self.reader)

    def images(self, indices: np.ndarray) -> np.ndarray:
        """Images at ``indices`` as (k, H, W, C) uint8, in the order asked for."""
        return self.reader.read_batch(indices)

    def mask_batch(self, indices: np.ndarray) -> np.ndarray:
        """Masks at ``indices`` as (k, H, W) uint8."""
        return np.take(self.masks, np.asarray(indices, np.int64), axis=0)


def pixel_shares(classes: list[str], masks: np.ndarray) -> tuple[dict[str, float], dict[str, int]]:
    """(each class's share of the labelled pixels, images holding the class) of one split's masks."""
    pixels = np.bincount(masks.reshape(-1), minlength=256)[:len(classes)].astype(np.float64)
    total = max(pixels.sum(), 1.0)
    images = [int(np.any(masks == i, axis=(1, 2)).sum()) if len(masks) else 0 for i in range(len(classes))]
    return ({c: round(float(p / total), 6) for c, p in zip(classes, pixels, strict=True)},
            dict(zip(classes, images, strict=True)))
