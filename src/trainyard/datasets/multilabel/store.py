"""The stored multi-label split: a classification split's images with multi-hot targets.

A multi-label split folder is a classification split folder (datasets/storage.py) whose
``labels.npy`` is uint8 (N, L): row i is image i's targets, 1 for each of the dataset's L labels
(``labels.txt``) it has. ``meta.json`` adds ``"task": "multilabel"`` and ``"labels": L``. So the
classification readers and batch loaders read it unchanged: a batch's labels are (B, L).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from trainyard.datasets.split_writer import SplitWriter

TASK = "multilabel"
TARGETS_PART = "targets.part"  # the targets a checkpoint made durable, one row of L bytes an image


class MultiLabelSplitWriter:
    """Streams one split: images to the classification writer (its label: the image's label
    count), targets kept in memory and appended to a .part file at each ``checkpoint``."""

    def __init__(self, folder: Path, height: int, width: int, channels: int, encoding: str, labels: int,
                 mean: bool = False, _resume: dict | None = None):
        self.labels = labels  # L, the dataset's label count
        self._targets: list[np.ndarray] = []
        self.label_counts = np.zeros(labels, np.int64)  # images holding each label: read by each progress report
        self._logged = 0
        if _resume is None:
            self.images = SplitWriter(Path(folder), height, width, channels, encoding, mean=mean)
            (self.images.folder / TARGETS_PART).write_bytes(b"")
        else:
            self.images = SplitWriter.resume(Path(folder), height, width, channels, encoding,
                                             _resume["images"], mean=mean)
            n = len(self.images)
            data = (self.images.folder / TARGETS_PART).read_bytes()[: n * labels]
            if len(data) != n * labels:
                raise ValueError(f"the resume file {TARGETS_PART} of {folder} is shorter than its checkpoint")
            self._targets = list(np.frombuffer(data, np.uint8).reshape(n, labels).copy())
            self.label_counts += np.frombuffer(data, np.uint8).reshape(n, labels).sum(axis=0, dtype=np.int64)
            self._logged = n

    @classmethod
    def resume(cls, folder: Path, height: int, width: int, channels: int, encoding: str, labels: int,
               state: dict, mean: bool = False) -> MultiLabelSplitWriter:
        """The writer as it was when ``checkpoint`` returned ``state``; later bytes are cut off."""
        return cls(folder, height, width, channels, encoding, labels, mean, _resume=state)

    def __len__(self) -> int:
        return len(self.images)

    def append(self, image: np.ndarray, target: np.ndarray, encoded: bytes | None = None) -> None:
        self.images.append(image, int(target.sum()), encoded)
        self._targets.append(np.asarray(target, np.uint8))
        self.label_counts += self._targets[-1]

    def targets(self) -> np.ndarray:
        """uint8 (N, L) of the images appended so far."""
        return np.stack(self._targets) if self._targets else np.zeros((0, self.labels), np.uint8)

    def mean(self) -> np.ndarray | None:
        return self.images.mean()

    def checkpoint(self) -> dict:
        with open(self.images.folder / TARGETS_PART, "ab") as log:
            log.truncate(self._logged * self.labels)
            for row in self._targets[self._logged:]:
                log.write(row.tobytes())
        self._logged = len(self._targets)
        return {"images": self.images.checkpoint()}

    def prune(self, state: dict) -> None:
        self.images.prune(state["images"])

    def close(self) -> None:
        self.images.close()
        (self.images.folder / TARGETS_PART).unlink(missing_ok=True)
        np.save(self.images.folder / "labels.npy", self.targets())
        meta_path = self.images.folder / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "task": TASK, "labels": self.labels}, indent=2))
