"""A one-machine multi-process job needs no name resolution (its ranks meet on loopback), and
ranks that cannot meet fail the job with where they waited, within a bounded time."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid

import pytest
from model_helpers import make_dataset, model_spec, statuses, write_job

from trainyard.core.paths import JobFolder
from trainyard.jobs.kinds.registry import get_kind


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=32, val=8, size=16)


def _no_uts_namespace() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True)
    return None if probe.returncode == 0 else f"unshare --uts fails here: {probe.stderr.decode()[:200]}"


def test_two_processes_train_where_the_host_name_does_not_resolve(dataset, tmp_path):
    why = _no_uts_namespace()
    if why:
        pytest.skip(why)
    name = f"nowhere-{uuid.uuid4().hex[:10]}"  # a host name no resolver knows
    with pytest.raises(OSError):
        socket.getaddrinfo(name, None)
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1, batch_size=8, processes=2,
                                                 snapshot_interval=0, val_interval=1))
    command = get_kind("model").command(JobFolder(job), [])
    shell = f"hostname {name} && exec " + " ".join(f"'{c}'" for c in command)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(["unshare", "--uts", "sh", "-c", shell], cwd=job, env=env, capture_output=True,
                          timeout=240)  # before: no rank ever joined, and torchrun retried for good
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, out[-3000:]
    assert [s["status"] for s in statuses(job)] == ["running", "done"], out[-3000:]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ranks_that_never_meet_fail_the_job_saying_where_they_waited(dataset, tmp_path):
    """Rank 0 of two, whose rank 1 never comes: failed with the rendezvous address, after the
    join timeout (not the ten-minute collective timeout)."""
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1, batch_size=8, processes=2))
    port = _closed_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "RANK": "0", "WORLD_SIZE": "2",
           "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "TRAINYARD_JOIN_TIMEOUT_S": "5"}
    proc = subprocess.run([sys.executable, "-m", "trainyard.training.run", str(job)], cwd=job, env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode != 0
    final = statuses(job)[-1]
    assert final["status"] == "failed", proc.stdout.decode(errors="replace")[-2000:]
    assert final["error"].startswith(f"the job's training processes could not meet at 127.0.0.1:{port} within 5 s"), \
        final["error"]
