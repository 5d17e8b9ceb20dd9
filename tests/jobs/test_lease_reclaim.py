"""No lost slots: leases carry their holder, any manager reclaims one whose holder or job is
gone, the scheduler ticks on a thread of its own, and the database recovers after a read-only spell."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
import time

import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.conftest import wait_for
from trainyard.core.status import Status
from trainyard.jobs.runs.manager import JobManager
from trainyard.jobs.runs.scheduler import Scheduler
from trainyard.jobs.store.store import Store


def _dead_holder() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, started


def _job(ctx, name: str = "j"):
    return ctx.manager.create("dataset", name, {"name": name}, needs={"pool": "cpu"})


def test_a_lease_whose_release_failed_is_reclaimed_by_the_next_manager(ctx, settings):
    job = _job(ctx)
    assert ctx.store.try_lease(job.id, ["cpu:0"], _dead_holder())
    ctx.store.update_job(job.id, status=Status.FAILED)  # ended, but the release never happened
    other = JobManager(settings, ctx.store, ctx.pools)
    other.reap()
    assert ctx.store.leases() == {}


def test_a_queued_jobs_lease_is_reclaimed_only_when_its_holder_is_gone(ctx, settings):
    held, orphaned = _job(ctx, "held"), _job(ctx, "orphaned")
    assert ctx.store.try_lease(held.id, ["cpu:0"], ctx.manager.holder)  # this live process
    assert ctx.store.try_lease(orphaned.id, ["dataset:0"], _dead_holder())
    JobManager(settings, ctx.store, ctx.pools).reap()
    assert ctx.store.leases() == {"cpu:0": held.id}


def test_a_pid_reused_by_another_process_is_not_the_holder(ctx, settings):
    job = _job(ctx)
    pid, started = ctx.manager.holder
    assert ctx.store.try_lease(job.id, ["cpu:0"], (pid, started - 3600))  # same pid, other start
    JobManager(settings, ctx.store, ctx.pools).reap()
    assert ctx.store.leases() == {}


def test_a_database_from_before_holders_gains_the_columns(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE leases (resource VARCHAR(40) PRIMARY KEY, job_id VARCHAR(40), acquired_at FLOAT)")
        db.execute("INSERT INTO leases VALUES ('gpu:0', 'j1', 0)")
    store = Store(f"sqlite:///{path}")
    [lease] = store.lease_rows()
    assert (lease.resource, lease.holder_pid) == ("gpu:0", None)
    assert store.try_lease("j2", ["gpu:1"], (1, 2.0))


# SQLite's read-only mode (PRAGMA query_only) stands in for a read-only disk; PostgreSQL has none.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_writes_recover_once_the_database_is_writable_again(ctx):
    """A connection that met a read-only database is dropped, not reused for good."""
    store = ctx.store
    job = _job(ctx)
    store.engine.dispose()
    with store.engine.connect() as connection:  # the pool's one connection turns read-only
        connection.execute(text("PRAGMA query_only=1"))
    with pytest.raises(OperationalError, match="readonly"):  # the write meets that connection
        store.update_job(job.id, name="renamed")
    store.update_job(job.id, name="renamed")
    assert store.get_job(job.id).name == "renamed"


def test_the_scheduler_ticks_while_asyncios_default_pool_is_full():
    ticks: list[float] = []

    class Manager:
        def tick(self):
            ticks.append(time.monotonic())

    async def main():
        loop = asyncio.get_running_loop()
        release = threading.Event()
        busy = [loop.run_in_executor(None, release.wait, 10) for _ in range(64)]  # slow checks
        scheduler = Scheduler(Manager(), interval_s=0.05)  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        ticks.clear()
        scheduler.start()
        await asyncio.sleep(1.0)
        count = len(ticks)
        await scheduler.stop()
        release.set()
        await asyncio.gather(*busy)
        return count

    assert asyncio.run(main()) >= 5


def test_an_adopted_running_job_keeps_its_leases(ctx, settings):
    job = _job(ctx)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert ctx.store.try_lease(job.id, ["dataset:0"], _dead_holder())
        ctx.store.update_job(job.id, status=Status.RUNNING, pid=live.pid, started_at=time.time(),
                             owner_pid=_dead_holder()[0])
        other = JobManager(settings, ctx.store, ctx.pools)
        other.reap()
        assert ctx.store.leases() == {"dataset:0": job.id}
        assert ctx.store.lease_rows()[0].holder_pid == other.pid
    finally:
        live.kill()
        live.wait()
    wait_for(lambda: (other.reap(), ctx.store.get_job(job.id).status.is_final)[1], 10)
    assert ctx.store.leases() == {}
