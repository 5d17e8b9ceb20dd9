"""Leases: never the same resource twice, also between processes sharing the database (SQLite
or PostgreSQL: ``database_url`` comes from tests/jobs/conftest.py)."""

from __future__ import annotations

import multiprocessing

from trainyard.jobs.scheduling.resources import GPU, Pools
from trainyard.jobs.store.store import Store

FOUR_GPUS = [GPU(i, "Fake GPU", 16 * 2**30) for i in range(4)]


def test_next_free_gpus_and_exact_sets(database_url):
    store = Store(database_url)
    pools = Pools(2, 1, FOUR_GPUS)
    assert pools.acquire(store, "a", {"pool": "gpu", "count": 2}) == ["gpu:0", "gpu:1"]
    assert pools.acquire(store, "b", {"pool": "gpu", "ids": [1, 2]}) is None  # 1 is held
    assert pools.acquire(store, "b", {"pool": "gpu", "ids": [2]}) == ["gpu:2"]
    assert pools.acquire(store, "c", {"pool": "gpu", "count": 2}) is None  # only gpu:3 is free
    store.release("a")
    assert pools.acquire(store, "c", {"pool": "gpu", "count": 2}) == ["gpu:0", "gpu:1"]
    assert store.leases() == {"gpu:0": "c", "gpu:1": "c", "gpu:2": "b"}


def test_dataset_pool_has_two_slots(database_url):
    store = Store(database_url)
    pools = Pools(2, 1, [])
    assert pools.acquire(store, "a", {"pool": "dataset"}) == ["dataset:0"]
    assert pools.acquire(store, "b", {"pool": "dataset"}) == ["dataset:1"]
    assert pools.acquire(store, "c", {"pool": "dataset"}) is None


def _race(url: str, job_id: str, resources: list[str], start, results) -> None:
    store = Store(url)
    start.wait()
    results.put((job_id, store.try_lease(job_id, resources)))


def test_two_processes_never_lease_the_same_gpu(database_url):
    url = database_url
    Store(url)  # create the tables once
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    # Half ask in the other order: on PostgreSQL that must not deadlock.
    orders = [["gpu:0", "gpu:1"], ["gpu:1", "gpu:0"]]
    procs = [context.Process(target=_race, args=(url, f"job{i}", orders[i % 2], start, results))
             for i in range(4)]
    for p in procs:
        p.start()
    start.set()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    winners = [job for job, won in outcomes if won]
    assert len(winners) == 1
    assert Store(url).leases() == {"gpu:0": winners[0], "gpu:1": winners[0]}
