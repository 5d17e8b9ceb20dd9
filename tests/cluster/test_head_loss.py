"""The Ray head (GCS) killed under a running server and running cluster jobs, then started again
at the same address: the server keeps serving (503 naming RAY_ADDRESS while the head is gone),
reconnects by itself, a job without restarts ends ``failed`` naming the cause, and one with
``--max-restarts`` is placed again on the new head and resumes from its checkpoint.

The cluster here is this module's own (its head is killed), not the session's.
"""

from __future__ import annotations

import signal
import socket

import psutil
import pytest
from fastapi.testclient import TestClient

from tests.cluster.conftest import NODE_ARGS
from tests.cluster.test_cluster_jobs import ended, spec, submit, tick_until, training_processes
from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset
from trainyard.core.paths import JobFolder
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def heads(ray_env, monkeypatch):
    """start() a one-node cluster (2 CPUs) at one fixed address; every one is shut down after."""
    from ray.cluster_utils import Cluster

    port, started = _free_port(), []

    def start():
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 2, "gcs_server_port": port, "include_dashboard": False, **NODE_ARGS})
        started.append(cluster)
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        return cluster

    try:
        yield start
    finally:
        for cluster in started:
            try:
                cluster.shutdown()
            except Exception:
                pass  # its head was killed: what is left is killed all the same


def checkpointed(ctx, job) -> bool:
    events = ctx.manager.folder(job.id).events
    return events.exists() and '"type":"checkpoint"' in events.read_text()


def kill_gcs(cluster) -> None:
    from ray._private import ray_constants

    for info in cluster.head_node.all_processes[ray_constants.PROCESS_TYPE_GCS_SERVER]:
        psutil.Process(info.process.pid).send_signal(signal.SIGKILL)


def test_the_server_outlives_the_head_and_jobs_end_or_are_placed_again(heads, settings, tmp_path):
    import ray

    dataset = make_dataset(tmp_path / "ds", train=48, val=12, size=16)
    first = heads()
    settings = settings.model_copy(update={"cluster": "ray", "abort_grace_s": 10.0})
    ctx = open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    client = TestClient(create_app(settings, pools=Pools(1, 1, []), run_scheduler=False))
    assert [n["alive"] for n in client.get("/api/system").json()["nodes"]] == [True]

    doomed = submit(ctx, spec(dataset, workers=1, epochs=500), "doomed")
    kept = submit(ctx, spec(dataset, workers=1, epochs=500, max_restarts=1), "kept")
    for job in (doomed, kept):
        assert tick_until(ctx, job.id, lambda j: ended(j) or checkpointed(ctx, j), timeout=240).status == "running"
    kept_folder = ctx.manager.folder(kept.id).path
    ranks = [p for job in (doomed, kept) for p in training_processes(ctx.manager.folder(job.id).path).values()]
    assert len(ranks) == 2

    kill_gcs(first)
    gone = wait_for(lambda: (r := client.get("/api/system")).status_code == 503 and r, 30)
    assert "RAY_ADDRESS=" + first.address in gone.json()["detail"]
    assert client.get("/api/jobs").status_code == 200  # the rest of the server serves on

    doomed = tick_until(ctx, doomed.id, ended, timeout=90)
    assert doomed.status == "failed"
    assert doomed.error.startswith(f"lost the Ray cluster: its head at RAY_ADDRESS={first.address} stopped answering")
    waiting = tick_until(ctx, kept.id, lambda j: j.status == "waiting", timeout=90)
    assert "head at RAY_ADDRESS" in waiting.status_detail
    wait_for(lambda: all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in ranks), 90)

    heads()  # a new head at the same address
    back = wait_for(lambda: (r := client.get("/api/system")).status_code == 200 and r, 120)
    assert [n["alive"] for n in back.json()["nodes"]] == [True]
    assert not ray.is_initialized()  # the server holds no Ray driver of its own: nothing to die with the head

    log = JobFolder(kept_folder).log
    tick_until(ctx, kept.id, lambda j: j.status == "running" and "resuming" in log.read_text().split("waiting for")[-1],
               timeout=240)
    assert ctx.manager.abort(kept.id).status == "aborted"
    snapshots = sorted(p.name for p in JobFolder(kept_folder).checkpoints.glob("*.pt"))
    assert snapshots and snapshots[0] == "epoch-0001.pt"
