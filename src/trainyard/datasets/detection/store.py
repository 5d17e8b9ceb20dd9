"""The stored detection split: the classification split's images plus boxes, labels and geometry.

A detection split folder is a classification split folder (datasets/storage.py: ``meta.json``
with ``"task": "detection"``, ``images.u8`` or ``images.bin`` + ``offsets.npy``) plus:

- ``boxes.npy``       float32 (M, 4): x1, y1, x2, y2 in the STORED image's pixels
- ``box_labels.npy``  int64 (M,): class index into the dataset's ``labels.txt`` (0-based)
- ``box_offsets.npy`` int64 (N+1,): image i's boxes are rows box_offsets[i]:box_offsets[i+1]
- ``geometry.npy``    float32 (N, 5): scale, pad_x, pad_y, original width, original height;
  original = (stored - pad) / scale, per axis (squash has one scale per axis: see below)
- ``labels.npy``      int64 (N,): the number of boxes of image i (not a class), for shared code

``meta.json`` also names the ``resize`` ("pad" or "squash", datasets/detection/geometry.py).
pad has one scale for both axes. squash scales each axis alone: column 0 is the x scale and the
y scale is stored height / original height, so use ``scales`` or ``to_original`` rather than
column 0 for y. Torch-free: readers run anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import SplitReader

TASK = "detection"
GEOMETRY_COLUMNS = ("scale", "pad_x", "pad_y", "original_width", "original_height")


# What a checkpoint makes durable beside the images (append-only, cut back to the checkpoint on
# resume, removed by close): per image its box count and geometry, per box its corners and class.
_PARTS = {"box_counts.part": (np.int64, 1), "geometry.part": (np.float64, 5),
          "boxes.part": (np.float32, 4), "box_labels.part": (np.int64, 1)}


class DetectionSplitWriter:
    """Streams one detection split: images to the classification writer, boxes kept in memory
    (and, at each ``checkpoint``, appended to .part files, so a killed build ``resume``s)."""

    def __init__(self, folder: Path, height: int, width: int, channels: int, encoding: str = "none",
                 mean: bool = False, resize: str = "pad", _resume: dict | None = None):
        self.resize = resize
        self._boxes: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        self._geometry: list[tuple[float, float, float, float, float]] = []
        self._logged = self._logged_boxes = 0  # images and boxes already in the .part files
        if _resume is None:
            self.images = SplitWriter(Path(folder), height, width, channels, encoding, mean=mean)
        else:
            self.images = SplitWriter.resume(Path(folder), height, width, channels, encoding, _resume["images"],
                                             mean=mean)
            self._reopen(_resume)

    @classmethod
    def resume(cls, folder: Path, height: int, width: int, channels: int, encoding: str, state: dict,
               mean: bool = False, resize: str = "pad") -> DetectionSplitWriter:
        """The writer as it was when ``checkpoint`` returned ``state``; later bytes are cut off."""
        return cls(folder, height, width, channels, encoding, mean, resize, _resume=state)

    def _part(self, name: str, rows: int) -> np.ndarray:
        dtype, width = _PARTS[name]
        size = np.dtype(dtype).itemsize * width * rows
        data = (self.images.folder / name).read_bytes()[:size]
        if len(data) != size:
            raise ValueError(f"the resume file {name} of {self.images.folder} is shorter than its checkpoint")
        return np.frombuffer(data, dtype).reshape(rows, width)

    def _reopen(self, state: dict) -> None:
        n, m = len(self.images), int(state["boxes"])
        counts = self._part("box_counts.part", n)[:, 0]
        if int(counts.sum()) != m:
            raise ValueError(f"the box counts of {self.images.folder} do not add up to its checkpoint")
        cuts = np.cumsum(counts)[:-1]  # n pieces (np.split makes one of nothing: hence the guard)
        self._boxes = np.split(self._part("boxes.part", m).copy(), cuts) if n else []
        self._labels = np.split(self._part("box_labels.part", m)[:, 0].copy(), cuts) if n else []
        self._geometry = [_geometry_row(row) for row in self._part("geometry.part", n)]
        self._logged, self._logged_boxes = n, m

    def __len__(self) -> int:
        return len(self.images)

    def append(self, image: np.ndarray, boxes: np.ndarray, labels: np.ndarray,
               geometry: tuple[float, float, float, float, float] | np.ndarray,
               encoded: bytes | None = None) -> None:
        """Add one image with its boxes (b, 4) in stored pixels and class indices (b,)."""
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
        labels = np.asarray(labels, np.int64).reshape(-1)
        if len(boxes) != len(labels):
            raise ValueError(f"{len(boxes)} boxes but {len(labels)} labels")
        self.images.append(image, len(boxes), encoded)
        self._boxes.append(boxes)
        self._labels.append(labels)
        self._geometry.append(_geometry_row(np.asarray(geometry, np.float64).reshape(5)))

    def checkpoint(self) -> dict:
        """Make everything appended so far durable (the images' checkpoint, then the boxes')."""
        images = self.images.checkpoint()
        new = slice(self._logged, len(self._boxes))
        counts = np.array([len(b) for b in self._boxes[new]], np.int64)
        fresh = {"box_counts.part": counts, "geometry.part": np.asarray(self._geometry[new], np.float64),
                 "boxes.part": np.concatenate([np.zeros((0, 4), np.float32), *self._boxes[new]]),
                 "box_labels.part": np.concatenate([np.zeros(0, np.int64), *self._labels[new]])}
        for name, values in fresh.items():
            dtype, width = _PARTS[name]
            logged = self._logged if name in ("box_counts.part", "geometry.part") else self._logged_boxes
            with open(self.images.folder / name, "ab") as log:
                log.truncate(np.dtype(dtype).itemsize * width * logged)
                log.write(np.ascontiguousarray(values, dtype).tobytes())
        self._logged, self._logged_boxes = len(self._boxes), self._logged_boxes + int(counts.sum())
        return {"images": images, "boxes": self._logged_boxes}

    def prune(self, state: dict) -> None:
        self.images.prune(state["images"])

    def mean(self) -> np.ndarray | None:
        return self.images.mean()

    def box_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The boxes (M, 4), their labels (M,) and the offsets (N+1,) appended so far."""
        boxes = np.concatenate(self._boxes) if self._boxes else np.zeros((0, 4), np.float32)
        labels = np.concatenate(self._labels) if self._labels else np.zeros(0, np.int64)
        counts = [len(b) for b in self._boxes]
        return boxes, labels, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def close(self) -> None:
        self.images.close()
        folder = self.images.folder
        for name in _PARTS:
            (folder / name).unlink(missing_ok=True)
        boxes, labels, offsets = self.box_arrays()
        np.save(folder / "boxes.npy", boxes)
        np.save(folder / "box_labels.npy", labels)
        np.save(folder / "box_offsets.npy", offsets)
        np.save(folder / "geometry.npy", np.asarray(self._geometry, np.float32).reshape(-1, 5))
        meta_path = folder / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["task"], meta["resize"] = TASK, self.resize
        meta_path.write_text(json.dumps(meta, indent=2))


def write_detection_split(split_dir: str | Path, images: Iterable[np.ndarray], boxes: list[np.ndarray],
                          labels: list[np.ndarray], geometry: np.ndarray, encoding: str = "none",
                          resize: str = "pad") -> None:
    """Write a whole detection split at once (tests, tools); all images share one shape."""
    geometry = np.asarray(geometry, np.float32).reshape(-1, 5)
    writer: DetectionSplitWriter | None = None
    count = 0
    for i, image in enumerate(images):
        if writer is None:
            h, w, c = image.shape
            writer = DetectionSplitWriter(Path(split_dir), h, w, c, encoding, resize=resize)
        writer.append(image, boxes[i], labels[i], geometry[i])
        count += 1
    if writer is None:
        raise ValueError("a detection split needs at least one image")
    if count != len(boxes) or count != len(labels) or count != len(geometry):
        raise ValueError(f"{count} images but {len(boxes)} box arrays, {len(labels)} label "
                         f"arrays and {len(geometry)} geometry rows")
    writer.close()


class DetectionSplit:
    """Random access to one stored detection split: images in batches, boxes per image."""

    def __init__(self, split_dir: str | Path):
        self.folder = Path(split_dir)
        meta = json.loads((self.folder / "meta.json").read_text())
        if meta.get("task") != TASK:
            raise ValueError(f"{self.folder} is not a detection split (task {meta.get('task')!r})")
        self.resize: str = meta.get("resize", "pad")
        self._reader = SplitReader(self.folder)
        self.height, self.width, self.channels = self._reader.shape
        self.encoding = self._reader.encoding
        self.boxes: np.ndarray = np.load(self.folder / "boxes.npy")
        self.box_labels: np.ndarray = np.load(self.folder / "box_labels.npy")
        self.box_offsets: np.ndarray = np.load(self.folder / "box_offsets.npy")
        self._geometry: np.ndarray = np.load(self.folder / "geometry.npy")

    def __len__(self) -> int:
        return len(self._reader)

    def images(self, indices: np.ndarray) -> np.ndarray:
        """Images at ``indices`` as (k, H, W, C) uint8, in the order asked for."""
        return self._reader.read_batch(indices)

    def image(self, i: int) -> np.ndarray:
        return self._reader.read(int(i))

    def targets(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Image ``i``'s boxes (b, 4) float32 in stored pixels and class indices (b,) int64."""
        start, end = int(self.box_offsets[i]), int(self.box_offsets[i + 1])
        return self.boxes[start:end].copy(), self.box_labels[start:end].copy()

    def geometry(self, i: int) -> tuple[float, float, float, int, int]:
        """scale, pad_x, pad_y, original width, original height of image ``i``."""
        scale, pad_x, pad_y, ow, oh = (float(v) for v in self._geometry[i])
        return scale, pad_x, pad_y, int(round(ow)), int(round(oh))

    def scales(self, i: int) -> tuple[float, float]:
        """The x and y scale of image ``i`` (equal for pad; per axis for squash)."""
        scale, _, _, _, oh = self.geometry(i)
        # pad keeps the aspect (one scale); squash fills the height, so its y scale is H / oh.
        return scale, (self.height / oh if self.resize == "squash" else scale)

    def to_original(self, i: int, boxes: np.ndarray) -> np.ndarray:
        """Map boxes (b, 4) from stored pixels of image ``i`` back to its original pixels."""
        _, pad_x, pad_y, _, _ = self.geometry(i)
        sx, sy = self.scales(i)
        out = np.asarray(boxes, np.float64).reshape(-1, 4).copy()
        out[:, 0::2] = (out[:, 0::2] - pad_x) / sx
        out[:, 1::2] = (out[:, 1::2] - pad_y) / sy
        return out.astype(np.float32)


def _geometry_row(row: np.ndarray) -> tuple[float, float, float, float, float]:
    """One image's geometry (scale, pad_x, pad_y, original width and height) as plain floats."""
    a, b, c, d, e = (float(v) for v in row)
    return a, b, c, d, e
