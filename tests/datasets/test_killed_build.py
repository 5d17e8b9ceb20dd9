"""``kill -9`` of a dataset build: its decode workers exit at once, and the next manager removes
the build's /dev/shm block and dataset.tmp (issue 13 item 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import wait_for
from trainyard.core.status import Status
from trainyard.datasets.leftovers import SHM_DIR, new_shm_name

# A build process: a pipeline of two workers and a named ring, then it waits to be killed.
BUILD = """
import sys, time
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.decode_worker import Geometry
pipeline = DecodePipeline(Geometry(8, 8, 3, "squash", "none"), 2, shm_name=sys.argv[1]).__enter__()
pipeline.pool.submit(time.sleep, 0).result()  # the workers exist now
print(" ".join(str(p) for p in pipeline.pool._processes), flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_decode_workers_exit_when_the_build_is_killed(tmp_path):
    job_dir = tmp_path / "20260101-000000-abcd"
    build = subprocess.Popen([sys.executable, "-c", BUILD, new_shm_name(job_dir)], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in build.stdout.readline().split()]
    assert len(workers) == 2
    os.kill(build.pid, signal.SIGKILL)
    build.wait()
    wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                             for p in workers), timeout=5)


def test_the_next_manager_removes_what_a_killed_build_left(ctx, settings):
    job = ctx.manager.create("dataset", "killed", {"name": "killed"}, needs={"pool": "dataset"})
    folder = ctx.manager.folder(job.id).work  # where the build writes
    (folder / "dataset.tmp" / "train").mkdir(parents=True)
    block = SHM_DIR / new_shm_name(folder)
    if SHM_DIR.is_dir():
        block.write_bytes(bytes(4096))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ctx.store.update_job(job.id, status=Status.RUNNING, pid=dead.pid, owner_pid=dead.pid, started_at=time.time())
    ctx.manager.reap()
    assert ctx.store.get_job(job.id).status == Status.FAILED
    assert not (folder / "dataset.tmp").exists()
    assert not block.exists()
    assert Path(folder).is_dir()  # the job's own work folder (log, events) stays
