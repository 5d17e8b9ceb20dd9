"""A split's samples as two arrays, not a Python object per image.

At 1.28 M images a list of ``Sample`` objects (a Path and an int each) holds ~0.7 KiB an image,
856 MiB that every forked decode worker inherits. ``SampleTable`` keeps the paths as one UTF-8
byte blob with int64 offsets and the labels as an int32 array: ~60 bytes an image. It reads
like the list it replaces (``len``, indexing and iteration give ``Sample``s), so code that
walks a plan is unchanged; ``path(i)`` and ``labels`` avoid making the objects at all.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from trainyard.datasets.sources import Sample


class SampleTable:
    """An immutable sequence of (path, label)."""

    def __init__(self, samples: Iterable[Sample] = ()):
        blobs, labels = [], []
        for s in samples:
            blobs.append(os.fsencode(s.path))
            labels.append(s.label)
        self._blob = np.frombuffer(b"".join(blobs), np.uint8)
        self._offsets = np.zeros(len(blobs) + 1, np.int64)
        np.cumsum([len(b) for b in blobs], out=self._offsets[1:])
        self.labels = np.asarray(labels, np.int32)

    def __len__(self) -> int:
        return len(self.labels)

    def path(self, i: int) -> str:
        return os.fsdecode(self._blob[self._offsets[i]:self._offsets[i + 1]].tobytes())

    def __getitem__(self, i: int) -> Sample:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return Sample(Path(self.path(i)), int(self.labels[i]))

    def __iter__(self) -> Iterator[Sample]:
        return (self[i] for i in range(len(self)))

    def digest(self) -> str:
        """A hash of every path and label, in order: a resumed build checks it plans the same."""
        h = hashlib.sha256(self._blob.tobytes())
        h.update(self._offsets.tobytes())
        h.update(self.labels.tobytes())
        return h.hexdigest()
