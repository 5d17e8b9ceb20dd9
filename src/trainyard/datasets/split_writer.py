"""Writing one split of a built dataset as a stream: SplitWriter.

Images go to disk as they come (raw or encoded, in the layout storage.py describes); only the
labels, the per-label counts and the exact mean sum stay in memory. A checkpoint makes what
was written resumable after a killed process.
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from trainyard.datasets.deep import DTYPES, full_scale
from trainyard.datasets.storage import ENCODINGS, encode_image

# The mean is summed in uint32 (3x faster than int64) and moved into an int64 total before
# it could overflow: 255 * 2**24 < 2**32 (and 65535 * 2**16 < 2**32 at 16 bits).
_U32_SAFE_COUNT = {8: 2**24, 16: 2**16}


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

