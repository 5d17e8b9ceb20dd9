"""Run the decode workers: images in, resized pixels out, in order, with bounded memory.

Work goes to a process pool in chunks; at most ``window`` chunks are in flight, so memory
stays flat however many images there are. Workers write pixels into a shared-memory ring
(one slot per in-flight chunk) and send back only a small status list, so a 256x256 image
crosses between processes as one memcpy, not a pickle through a pipe. Results come back in
submission order, which keeps a build with a given seed reproducible.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from trainyard.datasets.decode_worker import Geometry, Outcome, init_worker, process_chunk
from trainyard.datasets.memring import MemfdRing

# Below this many images, starting worker processes (up to a second with spawn) costs more
# than it saves: decode in the calling process.
MIN_IMAGES_FOR_POOL = 100
CHUNK_BYTES = 2 << 20  # decoded pixels per task: ~10 images of 256x256x3; the round trip is cheap

# (path, noise seed) per image
Item = tuple[str, tuple[int, ...]]


def mp_context() -> multiprocessing.context.BaseContext:
    """fork when it is safe (Linux, no other thread running), else spawn.

    A forked worker starts in milliseconds and imports nothing; spawn costs each worker a new
    interpreter and its imports (about half a second of CPU). fork is only safe while this
    process has a single thread, as the dataset job process does. Everything the workers run
    is module-level, so both work.
    """
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def chunk_size(geometry: Geometry) -> int:
    return max(1, min(64, CHUNK_BYTES // geometry.image_bytes))


class DecodePipeline:
    """Decode and resize images with ``workers`` processes (or in this process if 1, or when
    ``count``, the number of images when known, is below MIN_IMAGES_FOR_POOL).

    Use as a context manager; ``run`` yields ``(pixels, encoded, reason)`` per item, in order.
    ``pixels`` may be a view into shared memory: use it before asking for the next result.
    """

    def __init__(self, geometry: Geometry, workers: int, shm_name: str | None = None, count: int | None = None):
        self.geometry = geometry
        self.workers = workers if count is None or count >= MIN_IMAGES_FOR_POOL else 1
        self.size = chunk_size(geometry)
        self.window = 2 * workers + 1  # enough to keep every worker busy while we write
        self.pool: ProcessPoolExecutor | None = None
        self.shm: MemfdRing | None = None
        self.shm_name = shm_name  # kept for callers; the ring is a memfd now, which dies with its processes

    def __enter__(self) -> DecodePipeline:
        if self.workers > 1:
            slot_bytes = self.size * self.geometry.image_bytes
            # A memfd, not a name in /dev/shm that another process could open (datasets/memring.py).
            self.shm = MemfdRing(self.window * slot_bytes)
            self.pool = ProcessPoolExecutor(self.workers, mp_context=mp_context(), initializer=init_worker,
                                            initargs=(os.getpid(),))
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        if self.shm is not None:
            self.shm.unlink()  # frees the block once every process has let go of it
            try:
                self.shm.close()
            except BufferError:
                pass  # a result view is still referenced (e.g. by a traceback): freed at exit

    def run(self, items: Iterable[Item]) -> Iterator[Outcome]:
        """Outcomes of ``items`` in order; ``items`` is read lazily, a window ahead of the results."""
        source = iter(items)
        chunks = iter(lambda: list(itertools.islice(source, self.size)), [])
        if self.pool is None:
            for chunk in chunks:
                yield from process_chunk(self.geometry, chunk)
            return
        pending: deque[tuple[Future, int]] = deque()
        for k, chunk in enumerate(chunks):
            if len(pending) == self.window:
                yield from self._collect(*pending.popleft())
            slot = k % self.window  # free: its previous chunk was consumed just above
            future = self.pool.submit(process_chunk, self.geometry, chunk, self._block().name,
                                      self._offset(slot))
            pending.append((future, slot))
        while pending:
            yield from self._collect(*pending.popleft())

    def _block(self) -> MemfdRing:
        assert self.shm is not None  # __enter__ creates it with the pool, the only path here
        return self.shm

    def _offset(self, slot: int) -> int:
        return slot * self.size * self.geometry.image_bytes

    def _collect(self, future: Future, slot: int) -> Iterator[Outcome]:
        g = self.geometry
        outcomes = future.result()
        ring = np.ndarray((self.size, g.height, g.width, g.channels), g.dtype,
                          buffer=self._block().buf, offset=self._offset(slot))
        for j, (pixels, encoded, reason) in enumerate(outcomes):
            # pixels: sent back pickled by a worker that could not reach the ring
            yield (ring[j] if pixels is None else pixels) if reason is None else None, encoded, reason
