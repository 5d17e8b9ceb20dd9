"""On-disk layout of a built dataset split, written as a stream and read in batches.

A dataset folder holds one folder per split (``train/``, ``val/``, ``test/``), each with:

- ``meta.json``: height, width, channels, encoding, count, depth (8 when absent: older builds)
- ``labels.npy``: int64 (N,)
- encoding "none": ``images.u8``, raw uint8 (N, H, W, C), read through ``numpy.memmap``; a
  16-bit split's ``images.u16`` holds uint16 the same way (16-bit is stored raw only)
- encoding "png"/"jpeg": ``images.bin`` (encoded images back to back) + ``offsets.npy``
  (int64, N+1; image i is bytes offsets[i]:offsets[i+1])

plus, beside the splits, ``mean.npy`` (float32 H,W,C) and ``mean.png`` of the train split. The
mean is in 0..255 units of the full scale at any depth (a 16-bit mean is divided by 257), so
everything that subtracts it (artifact/normalize.py) works in 0..1 units the same way. A
full-depth split (16-bit or N channels) also sums each channel's squares, for its std.
"""

from __future__ import annotations

import io
import json
import os
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from PIL import Image

from trainyard.core.files import write_json_atomic
from trainyard.datasets.deep import DTYPES, full_scale
from trainyard.datasets.images import png_bytes, to_pil

SPLITS = ("train", "val", "test")
ENCODINGS = ("none", "png", "jpeg")
JPEG_QUALITY = 95
PNG_COMPRESS_LEVEL = 3  # zlib level: close to the default's size at a fraction of its time
# The mean is summed in uint32 (3x faster than int64) and moved into an int64 total before
# it could overflow: 255 * 2**24 < 2**32 (and 65535 * 2**16 < 2**32 at 16 bits).
_U32_SAFE_COUNT = {8: 2**24, 16: 2**16}


def encode_image(image: np.ndarray, encoding: str) -> bytes:
    """Encode an HWC uint8 array as PNG or JPEG bytes."""
    if encoding == "png":
        return png_bytes(image, PNG_COMPRESS_LEVEL)
    if encoding != "jpeg":
        raise ValueError(f"unknown encoding {encoding!r}; valid: {', '.join(ENCODINGS)}")
    buf = io.BytesIO()
    to_pil(image).save(buf, "JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def decode_image(data: bytes, channels: int) -> np.ndarray:
    """Decode PNG/JPEG bytes written by encode_image to an HWC uint8 array."""
    with Image.open(io.BytesIO(data)) as pil:
        pixels = np.asarray(pil.convert("L" if channels == 1 else "RGB"))
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


class SplitWriter:
    """Streams images of one split to disk; only labels (and the mean sum) stay in memory.

    The files grow as images come. With ``mean=True`` the per-pixel sum is accumulated exactly
    (int64) for the mean image. ``counts`` holds the images per label so far (kept as they
    come: a progress report reads it without counting). ``checkpoint`` makes what was written
    so far resumable (labels, offsets and the mean sum beside the images); ``resume`` reopens
    a checkpoint and continues exactly where it stood.
    """

    def __init__(self, folder: Path, height: int, width: int, channels: int, encoding: str,
                 mean: bool = False, classes: int = 0, _resume: dict | None = None, depth: int = 8):
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {encoding!r}; valid: {', '.join(ENCODINGS)}")
        self.depth, self.dtype = depth, np.dtype(DTYPES[depth])
        if (depth != 8 or channels not in (1, 3)) and encoding != "none":
            raise ValueError(f"{depth}-bit, {channels}-channel images are stored raw: encoding 'none'")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shape = (height, width, channels)
        self.encoding = encoding
        self.labels = array("q")
        self._offsets = array("q", [0])
        self.counts = np.zeros(classes, np.int64)
        self._name = f"images.u{depth}" if encoding == "none" else "images.bin"
        self._sum = np.zeros(self.shape, np.int64) if mean else None
        self._partial = np.zeros(self.shape, np.uint32) if mean else None
        full_depth = depth != 8 or channels not in (1, 3)
        self._squares = np.zeros(channels, np.float64) if mean and full_depth else None
        self._logged = 0  # labels (and offsets) already in the .part files
        self._file: BinaryIO
        if _resume is None:
            self._file = open(self.folder / self._name, "wb")
        else:
            self._reopen(_resume)

    @classmethod
    def resume(cls, folder: Path, height: int, width: int, channels: int, encoding: str,
               state: dict, mean: bool = False, classes: int = 0, depth: int = 8) -> SplitWriter:
        """The writer as it was when ``checkpoint`` returned ``state``; later bytes are cut off."""
        return cls(folder, height, width, channels, encoding, mean, classes, _resume=state, depth=depth)

    def _reopen(self, state: dict) -> None:
        n = state["count"]
        self._file = open(self.folder / self._name, "r+b")
        self._file.truncate(state["bytes"])
        self._file.seek(0, os.SEEK_END)
        self.labels.frombytes((self.folder / "labels.part").read_bytes()[: 8 * n])
        if self.encoding != "none":
            self._offsets = array("q")
            self._offsets.frombytes((self.folder / "offsets.part").read_bytes()[: 8 * (n + 1)])
        if len(self.labels) != n or (self.encoding != "none" and len(self._offsets) != n + 1):
            raise ValueError(f"the resume files of {self.folder} are shorter than their checkpoint")
        self._logged = n
        labels = np.frombuffer(self.labels, np.int64)
        self.counts = np.bincount(labels, minlength=len(self.counts)).astype(np.int64)
        if self._sum is not None and n:
            self._sum[:] = np.load(self.folder / state["mean"])
        if self._squares is not None and n:
            self._squares[:] = state["squares"]

    def __len__(self) -> int:
        return len(self.labels)

    def append(self, image: np.ndarray, label: int, encoded: bytes | None = None) -> None:
        """Add one HWC image of the split's dtype. ``encoded`` passes bytes a worker encoded."""
        if image.shape != self.shape or image.dtype != self.dtype:
            raise ValueError(f"expected {self.dtype} {self.shape}, got {image.dtype} {image.shape}")
        if self.encoding == "none":
            self._file.write(np.ascontiguousarray(image).data)
        else:
            data = encoded if encoded is not None else encode_image(image, self.encoding)
            self._file.write(data)
            self._offsets.append(self._offsets[-1] + len(data))
        if self._partial is not None:
            np.add(self._partial, image, out=self._partial)
            if (len(self.labels) + 1) % _U32_SAFE_COUNT[self.depth] == 0:
                self._flush_mean()
        if self._squares is not None:
            flat = image.reshape(-1, self.shape[2]).astype(np.float64)
            self._squares += np.einsum("ij,ij->j", flat, flat)
        label = int(label)
        self.labels.append(label)
        if label >= len(self.counts):
            self.counts = np.concatenate([self.counts, np.zeros(label + 1 - len(self.counts), np.int64)])
        self.counts[label] += 1

    def _flush_mean(self) -> None:
        assert self._sum is not None and self._partial is not None  # called only when keeping a mean
        self._sum += self._partial
        self._partial[:] = 0

    def mean(self) -> np.ndarray | None:
        """The float32 (H, W, C) mean of the images appended in 0..255 units of the full
        scale, or None if none were."""
        if self._sum is None or not self.labels:
            return None
        self._flush_mean()
        mean = self._sum / len(self.labels)
        return (mean if self.depth == 8 else mean * (255.0 / full_scale(self.dtype))).astype(np.float32)

    def channel_stats(self) -> tuple[list[float], list[float]] | None:
        """(mean, std) of each channel over every pixel appended, in 0..1 units of the full
        scale; None for an 8-bit 1- or 3-channel split (it keeps no squares)."""
        if self._squares is None or self._sum is None or not self.labels:
            return None
        self._flush_mean()
        top, pixels = full_scale(self.dtype), len(self.labels) * self.shape[0] * self.shape[1]
        mean = self._sum.sum(axis=(0, 1)) / pixels
        std = np.sqrt(np.maximum(self._squares / pixels - mean * mean, 0.0))
        return [round(float(v / top), 8) for v in mean], [round(float(v / top), 8) for v in std]

    def checkpoint(self) -> dict:
        """Make everything appended so far durable against a killed process; the state to
        ``resume`` from. The mean sum goes to a file named by the count, so an older state's
        file stays valid until the caller has recorded the new one (then ``prune``)."""
        n = len(self.labels)
        with open(self.folder / "labels.part", "ab") as log:
            log.truncate(8 * self._logged)
            log.write(self.labels[self._logged:].tobytes())
        if self.encoding != "none":
            with open(self.folder / "offsets.part", "ab") as log:  # n + 1 entries, from the 0
                log.truncate(8 * (self._logged + 1))  # growing an empty file writes that 0
                log.write(self._offsets[self._logged + 1:].tobytes())
        self._logged = n
        self._file.flush()
        mean = None
        if self._sum is not None and self._partial is not None and n:
            mean = f"mean-sum-{n}.npy"
            np.save(self.folder / mean, self._sum + self._partial)
        state: dict[str, Any] = {"count": n, "bytes": self._file.tell(), "mean": mean}
        if self._squares is not None:
            state["squares"] = self._squares.tolist()
        return state

    def prune(self, state: dict) -> None:
        """Remove the mean-sum files of checkpoints older than ``state``."""
        for old in self.folder.glob("mean-sum-*.npy"):
            if old.name != state["mean"]:
                old.unlink()

    def close(self) -> None:
        self._file.close()
        for scratch in (*self.folder.glob("mean-sum-*.npy"), self.folder / "labels.part",
                        self.folder / "offsets.part"):
            scratch.unlink(missing_ok=True)
        np.save(self.folder / "labels.npy", np.frombuffer(self.labels, np.int64))
        if self.encoding != "none":
            np.save(self.folder / "offsets.npy", np.frombuffer(self._offsets, np.int64))
        h, w, c = self.shape
        meta = {"height": h, "width": w, "channels": c, "encoding": self.encoding,
                "count": len(self.labels), "depth": self.depth}
        (self.folder / "meta.json").write_text(json.dumps(meta, indent=2))


class SplitReader:
    """Random access to one stored split."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        meta = json.loads((self.folder / "meta.json").read_text())
        self.shape: tuple[int, int, int] = (meta["height"], meta["width"], meta["channels"])
        self.encoding: str = meta["encoding"]
        self.depth: int = int(meta.get("depth", 8))
        self.dtype = np.dtype(DTYPES[self.depth])
        self.labels: np.ndarray = np.load(self.folder / "labels.npy")
        n = len(self.labels)
        if self.encoding == "none":
            self._images = _memmap(self.folder / f"images.u{self.depth}", (n, *self.shape), self.dtype)
        else:
            self.offsets = np.load(self.folder / "offsets.npy")
            self._data = _memmap(self.folder / "images.bin", (int(self.offsets[-1]),))

    def __len__(self) -> int:
        return len(self.labels)

    def read(self, i: int) -> np.ndarray:
        """Image ``i`` as an HWC uint8 array (a copy, safe to modify)."""
        if self.encoding == "none":
            return np.array(self._images[i])
        return decode_image(self.read_encoded(i), self.shape[2])

    def read_encoded(self, i: int) -> bytes:
        """The stored PNG/JPEG bytes of image ``i`` (encoded splits only)."""
        return self._data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def read_batch(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Images at ``indices`` as one (N, H, W, C) array of the split's dtype, in the order asked for."""
        idx = np.asarray(indices, dtype=np.int64)
        if self.encoding != "none":
            out = np.empty((len(idx), *self.shape), np.uint8)
            for j, i in enumerate(idx):
                out[j] = self.read(int(i))
            return out
        if len(idx) < 2 or bool(np.all(idx[1:] >= idx[:-1])):  # file order already: one gather
            return np.take(self._images, idx, axis=0)
        # Gather in file order (fewer seeks when the split is not in the page cache), then put
        # back in the asked order with a second gather: a scatter (``out[order] = ...``) of a
        # 4-d array is several times slower than both gathers together.
        order = np.argsort(idx, kind="stable")
        in_file_order = np.take(self._images, idx[order], axis=0)
        return np.take(in_file_order, np.argsort(order), axis=0)


def _memmap(path: Path, shape: tuple[int, ...], dtype: np.dtype | type = np.uint8) -> np.ndarray:
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype)  # numpy cannot map an empty file
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def open_split(dataset_dir: Path, split: str) -> SplitReader:
    """Open ``split`` ("train", "val" or "test") of a built dataset folder."""
    folder = Path(dataset_dir) / split
    if not (folder / "meta.json").is_file():
        raise FileNotFoundError(f"dataset {dataset_dir} has no {split!r} split")
    return SplitReader(folder)


def split_names(dataset_dir: Path) -> list[str]:
    """The splits present in a built dataset folder, in train, val, test order."""
    return [s for s in SPLITS if (Path(dataset_dir) / s / "meta.json").is_file()]


def save_mean(dataset_dir: Path, mean: np.ndarray) -> None:
    """Write the train mean as mean.npy (float32 H,W,C) and mean.png (rounded to uint8)."""
    dataset_dir = Path(dataset_dir)
    np.save(dataset_dir / "mean.npy", mean.astype(np.float32))
    pixels = np.clip(np.rint(mean), 0, 255).astype(np.uint8)
    if pixels.shape[2] not in (1, 3):  # N channels: the picture shows the first
        pixels = pixels[:, :, :1]
    (dataset_dir / "mean.png").write_bytes(png_bytes(pixels))


def finish_dataset(dataset_dir: Path, classes: Sequence[str], train_mean: np.ndarray | None, info: dict) -> None:
    """Write what sits beside the splits of a built dataset: labels.txt (class names in label
    order), the train mean (save_mean) and info.json, the summary the pages and training read."""
    assert train_mean is not None  # a build refuses a dataset without training images before this
    (dataset_dir / "labels.txt").write_text("".join(f"{name}\n" for name in classes), encoding="utf-8")
    save_mean(dataset_dir, train_mean)
    write_json_atomic(dataset_dir / "info.json", info)
