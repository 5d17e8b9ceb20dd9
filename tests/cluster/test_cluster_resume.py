"""1-, 2- and 3-worker cluster jobs through two checkpoints, a lost rank and a resume: each ends
with the metrics of one local process training on the whole global batch without a break.

A one-worker job runs as a local one-process job does (no process group, no DDP); it used to
fail at its first checkpoint (its RNG state held itself: RecursionError).
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

from tests.cluster.test_cluster_jobs import TOLERANCE, ended, spec, submit, tick_until, training_processes
from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset, metrics, one_thread, write_job
from trainyard.jobs.views.documents import job_detail
from trainyard.training.run import main as train_in_process

pytestmark = pytest.mark.slow
BATCH = 8
NODE_ARGS = {"object_store_memory": 80 * 2**20, "node_ip_address": "127.0.0.1"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    # 48 training images: whole global batches of 8, 16 and 24
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=48, val=12, size=16)


@pytest.fixture
def third_node(ray_cluster):
    """One more one-CPU node for the length of a test (a 3-worker job needs three)."""
    cluster, _ = ray_cluster
    node = cluster.add_node(num_cpus=1, **NODE_ARGS)
    cluster.wait_for_nodes()
    try:
        yield node
    finally:
        cluster.remove_node(node)


def reference(tmp_path, dataset, global_batch):
    job = write_job(tmp_path / "one", spec(dataset, workers=0, batch_size=global_batch, epochs=4))
    with one_thread():
        assert train_in_process(job) == 0
    return job


def lose_a_rank_then_resume(ctx, dataset, workers, tmp_path, monkeypatch):
    """Hold the epoch-3 checkpoint's write, SIGKILL rank 0 meanwhile, resume: done, exact."""
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / "epoch-0003.pt.hold").touch()
    monkeypatch.setenv("TRAINYARD_CHECKPOINT_HOLD", str(hold))
    job = submit(ctx, spec(dataset, workers=workers, batch_size=BATCH, epochs=4))
    folder = ctx.manager.folder(job.id)
    tick_until(ctx, job.id, lambda j: (hold / "epoch-0003.pt.writing").exists() or ended(j), timeout=240)
    assert sorted(p.name for p in folder.checkpoints.glob("*.pt")) == ["epoch-0001.pt", "epoch-0002.pt"]
    log = folder.log.read_text()
    if workers == 1:
        assert "DDP" not in log  # a local one-process job: no process group
    else:
        assert f"{workers} processes (gloo, DDP)" in log
    training_processes(folder.path)[0].send_signal(signal.SIGKILL)
    failed = tick_until(ctx, job.id, ended, timeout=60)
    assert failed.status == "failed" and "rank 0" in failed.error and "SIGKILL" in failed.error

    (hold / "epoch-0003.pt.hold").unlink()
    ctx.manager.resume(job.id)
    done = tick_until(ctx, job.id, lambda j: j.status not in ("queued", "failed") and ended(j), timeout=300)
    assert done.status == "done", done.error
    assert "resuming" in folder.log.read_text().split("SIGKILL", 1)[1]
    detail = job_detail(ctx.manager, done).as_json()
    assert detail["snapshots"] == [1, 2, 3, 4]

    one = reference(tmp_path, dataset, BATCH * workers)
    for name in ("train_loss", "val_loss", "val_accuracy"):
        ours, theirs = detail["metrics"][name], metrics(one, name)
        assert [e for e, _ in ours] == [e for e, _ in theirs], name
        assert np.allclose([v for _, v in ours], [v for _, v in theirs], rtol=0, atol=TOLERANCE), (name, ours, theirs)
    wait_for(lambda: not training_processes(folder.path), 15)


def test_a_one_worker_cluster_job_checkpoints_and_resumes_like_a_local_one(cluster_ctx, dataset, tmp_path, monkeypatch):
    lose_a_rank_then_resume(cluster_ctx, dataset, 1, tmp_path, monkeypatch)


def test_a_two_worker_cluster_job_checkpoints_and_resumes_exactly(cluster_ctx, dataset, tmp_path, monkeypatch):
    lose_a_rank_then_resume(cluster_ctx, dataset, 2, tmp_path, monkeypatch)


def test_a_three_worker_cluster_job_checkpoints_and_resumes_exactly(cluster_ctx, third_node, dataset, tmp_path,
                                                                    monkeypatch):
    lose_a_rank_then_resume(cluster_ctx, dataset, 3, tmp_path, monkeypatch)
