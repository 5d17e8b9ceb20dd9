"""The last few models a server loaded from checkpoints, each kept while its file is unchanged.

A request must not read a checkpoint again, and a server must not hold every model it ever
served: each loader (classifier, detector, segmenter) keeps one `ModelCache` of its own size,
keyed by the file's identity (path, modification time, size) plus what else changes the load.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


def file_key(path: Path, missing: Callable[[str], Exception]) -> tuple[str, int, int]:
    """(path, mtime, size) of a checkpoint: a rewritten file is another key. ``missing(message)``
    is raised when the file is not there."""
    try:
        stat = path.stat()
    except OSError:
        raise missing(f"checkpoint {path.name} not found") from None
    return str(path), stat.st_mtime_ns, stat.st_size


class ModelCache(Generic[T]):
    """An LRU of ``size`` loaded models; loading happens outside the lock (two first requests
    may both load: the second replaces the first, which is the same model)."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        loaded = load()
        with self._lock:
            self._entries[key] = loaded
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return loaded

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._entries))
