"""DecodePipeline: results in order through the shared-memory ring, with fork and spawn."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from dataset_helpers import make_class_tree

import trainyard.datasets.pipeline as pipeline_module
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.pipeline import DecodePipeline


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_pool_matches_inline_in_order(tmp_path: Path, monkeypatch, start_method: str):
    monkeypatch.setattr(pipeline_module, "mp_context", lambda: multiprocessing.get_context(start_method))
    monkeypatch.setattr(pipeline_module, "CHUNK_BYTES", 8 * 8 * 3 * 3)  # 3 images a chunk
    paths = list(make_class_tree(tmp_path, {"a": 20}))
    (tmp_path / "bad.png").write_bytes(b"junk")
    paths.insert(7, tmp_path / "bad.png")  # a failure in the middle keeps its place
    items = [(str(p), (0, i)) for i, p in enumerate(paths)]  # 7 chunks > window of 5
    geometry = Geometry(8, 8, 3, "fill", "png")

    def collect(workers):
        with DecodePipeline(geometry, workers) as pipeline:
            return [(None if p is None else p.copy(), e, r) for p, e, r in pipeline.run(items)]

    inline, pooled = collect(1), collect(2)
    assert len(pooled) == len(items)
    for (p1, e1, r1), (p2, e2, r2) in zip(inline, pooled):
        assert r1 == r2 and e1 == e2
        if r1 is None:
            np.testing.assert_array_equal(p1, p2)
    assert inline[7][2] and all(r is None for i, (_, _, r) in enumerate(pooled) if i != 7)


def _write_into(name: str, value: int) -> None:
    """In a decode worker's place: attach to the ring by its name and fill it."""
    from trainyard.datasets.memring import attach

    attach(name)[:] = bytes([value]) * 64


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_the_ring_is_a_memfd_no_other_process_opens_by_name(tmp_path: Path, monkeypatch, start_method: str):
    """Issue 28 point 5: the decode ring is no file in /dev/shm that a job could overwrite; the
    workers reach it by descriptor (inherited by fork, the parent's by /proc under spawn)."""
    from trainyard.datasets.memring import MemfdRing

    monkeypatch.setattr(pipeline_module, "mp_context", lambda: multiprocessing.get_context(start_method))
    paths = list(make_class_tree(tmp_path, {"a": 12}))
    with DecodePipeline(Geometry(8, 8, 3, "fill", "none"), 2) as pipeline:
        assert pipeline.shm.name.startswith("memfd:")
        # An anonymous file, in no folder: /dev/shm holds nothing of it to open or overwrite.
        assert os.readlink(f"/proc/self/fd/{pipeline.shm.fd}").startswith("/memfd:trainyard-decode-ring")
        results = [p.copy() for p, _, r in pipeline.run([(str(p), (0, i)) for i, p in enumerate(paths)])]
    assert len(results) == 12
    ring = MemfdRing(64)
    child = multiprocessing.get_context(start_method).Process(target=_write_into, args=(ring.name, 7))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and bytes(ring.buf) == bytes([7]) * 64
    ring.unlink()
    ring.close()
