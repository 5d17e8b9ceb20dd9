"""On-disk layout of a built dataset split and reading it in batches (split_writer.py writes it).

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
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from trainyard.core.files import write_json_atomic
from trainyard.datasets.deep import DTYPES
from trainyard.datasets.images import png_bytes, to_pil

SPLITS = ("train", "val", "test")
ENCODINGS = ("none", "png", "jpeg")
JPEG_QUALITY = 95
PNG_COMPRESS_LEVEL = 3  # zlib level: close to the default's size at a fraction of its time


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
