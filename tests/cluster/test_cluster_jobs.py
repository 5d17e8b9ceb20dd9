"""Model jobs on a real Ray cluster of two one-CPU nodes (conftest.py): placement on both nodes
with the losses of one process, waiting for the cluster, abort, a killed worker, and restarts.

The jobs go the whole way a server's do: the job manager starts the cluster launcher as the
job's process, the launcher places the ranks and runs the training entry point on each node.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time

import numpy as np
import psutil
import pytest

from tests.conftest import tick_until as shared_tick_until
from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset, metrics, model_spec, one_thread, write_job
from trainyard.core.paths import JobFolder
from trainyard.jobs.views.documents import job_detail
from trainyard.jobs.views.hardware import Hardware
from trainyard.jobs.views.system import system_report
from trainyard.training.run import main as train_in_process

pytestmark = pytest.mark.slow
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=64, val=16, size=16)


def spec(dataset, workers=2, batch_size=8, **overrides):
    fields = dict(epochs=2, batch_size=batch_size, snapshot_interval=1, val_interval=1,
                  lr={"policy": "step", "base_lr": 0.05, "step_percent": 50, "gamma": 0.1})
    if workers:
        fields.update(processes=workers, cluster={"workers": workers, "device": "cpu"})
    return model_spec(dataset, **{**fields, **overrides})


def submit(ctx, model_spec_, name="cluster"):
    needs = {"pool": "cluster", "device": "cpu", "count": model_spec_.cluster.workers}
    return ctx.manager.create("model", name, model_spec_.model_dump(mode="json"), needs=needs)


# A cluster job starts Ray workers too: a longer default bound, polled less often.
tick_until = functools.partial(shared_tick_until, timeout=180, interval=0.25)


def ended(job):
    return job.status in ("done", "failed", "aborted")


def training_processes(job_dir) -> dict[int, psutil.Process]:
    """The job's training processes by rank, wherever Ray's workers started them."""
    found = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = proc.info["cmdline"] or []
            if "trainyard.training.run" in cmdline and str(job_dir) in cmdline:
                found[int(proc.environ().get("RANK", "0"))] = proc  # one worker: no RANK
        except (psutil.Error, KeyError):
            continue
    return found


def gone(procs) -> bool:
    def dead(p):
        try:
            return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return all(dead(p) for p in procs)


def wait_for_training(ctx, job, what='"type":"metric"'):
    """Tick until the job has written ``what`` (the manager starts it on the first tick)."""
    events = ctx.manager.folder(job.id).events

    def written(job):
        assert not ended(job), (job.status, job.error)
        return events.exists() and what in events.read_text()

    return tick_until(ctx, job.id, written)


def wait_for_ranks(ctx, job, count) -> dict[int, psutil.Process]:
    """Tick until the job's ``count`` training processes run; them by rank. Found as they start,
    not after a first metric: a short job on a fast machine may be done training by then."""
    folder = ctx.manager.folder(job.id).path
    found: dict[int, psutil.Process] = {}

    def started(job):
        assert not ended(job), (job.status, job.error)
        found.update(training_processes(folder))
        return len(found) == count

    tick_until(ctx, job.id, started)
    return found


def ray_worker_of(process: psutil.Process) -> psutil.Process:
    """The Ray worker (its process title ``ray::RankWorker...``) that started a training process,
    with or without a sandbox's supervisor between them."""
    for ancestor in process.parents():
        if " ".join(ancestor.cmdline()).startswith("ray::"):
            return ancestor
    raise AssertionError(f"no Ray worker above {process}: {[p.cmdline() for p in process.parents()]}")


def test_jobs_wait_for_the_cluster_land_on_both_nodes_match_one_process_and_abort(cluster_ctx, dataset, tmp_path):
    ctx = cluster_ctx
    holder = submit(ctx, spec(dataset, epochs=500), "holder")
    holder = wait_for_training(ctx, holder)
    workers = job_detail(ctx.manager, holder).as_json()["workers"]
    assert [w["rank"] for w in workers] == [0, 1] and len({w["node_id"] for w in workers}) == 2
    assert all(w["device"] == "cpu" and w["host"] for w in workers)

    queued = submit(ctx, spec(dataset), "queued")  # two CPUs more than the cluster has free
    waiting = tick_until(ctx, queued.id, lambda j: j.status_detail and "on the cluster" in j.status_detail)
    assert (waiting.status, waiting.status_detail) == ("waiting", "waiting for 2 CPUs on the cluster (0 free)")

    nodes = system_report(ctx, Hardware()).as_json()["nodes"]
    assert [(n["cpus"], n["alive"]) for n in nodes] == [(0, True), (1, True), (1, True)]  # the head first
    assert [n["cpus_in_use"] for n in nodes[1:]] == [1, 1] and all(n["jobs"] == [holder.id] for n in nodes[1:])
    figures = Hardware().job(ctx.store.get_job(holder.id)).as_json()["workers"]
    assert [w["rank"] for w in figures] == [0, 1] and all(w["cpu"]["processes"] >= 1 for w in figures)

    ranks = training_processes(ctx.manager.folder(holder.id).path)
    assert sorted(ranks) == [0, 1]
    # as a local job's: the launcher's niceness (not Ray's 15, where we may lower it) and thread
    # settings; gloo told the interface of the node address Ray reports (127.0.0.1 here)
    if os.geteuid() == 0:
        assert [p.nice() for p in ranks.values()] == [os.getpriority(os.PRIO_PROCESS, 0)] * 2
    assert [p.environ().get("OMP_NUM_THREADS") for p in ranks.values()] == [os.environ["OMP_NUM_THREADS"]] * 2
    assert [p.environ().get("GLOO_SOCKET_IFNAME") for p in ranks.values()] == ["lo", "lo"]
    assert {p.environ().get("MASTER_ADDR") for p in ranks.values()} == {"127.0.0.1"}
    aborting = threading.Thread(target=ctx.manager.abort, args=(holder.id,))  # waits for the launcher
    aborting.start()
    wait_for(lambda: gone(ranks.values()), 15)  # the bound: raises when a rank outlives it
    aborting.join()
    assert ctx.store.get_job(holder.id).status == "aborted"

    done = tick_until(ctx, queued.id, ended, timeout=300)
    assert done.status == "done", done.error
    folder = ctx.manager.folder(queued.id).path
    detail = job_detail(ctx.manager, done).as_json()
    assert len({w["node_id"] for w in detail["workers"]}) == 2
    assert "2 processes (gloo, DDP)" in JobFolder(folder).log.read_text()

    reference = write_job(tmp_path / "one", spec(dataset, workers=0, batch_size=16))
    with one_thread():
        assert train_in_process(reference) == 0
    for name in ("train_loss", "val_loss", "val_accuracy"):
        ours, theirs = metrics(folder, name), metrics(reference, name)
        assert [e for e, _ in ours] == [e for e, _ in theirs], name
        assert np.allclose([v for _, v in ours], [v for _, v in theirs], rtol=0, atol=TOLERANCE), (name, ours, theirs)


def test_a_worker_killed_with_sigkill_fails_the_job_naming_its_node(cluster_ctx, dataset):
    ctx = cluster_ctx
    job = wait_for_training(ctx, submit(ctx, spec(dataset, epochs=500)))
    node = job_detail(ctx.manager, job).as_json()["workers"][1]["node_id"]
    ranks = training_processes(ctx.manager.folder(job.id).path)
    ranks[1].send_signal(signal.SIGKILL)
    job = tick_until(ctx, job.id, ended, timeout=30)  # the bound: raises when the job outlives it
    assert job.status == "failed"
    assert job.error.startswith("training process rank 1 on node ") and node[:8] in job.error
    assert job.error.endswith("was killed by SIGKILL")
    wait_for(lambda: gone(ranks.values()), 10)


def test_with_max_restarts_a_killed_worker_resumes_and_every_epoch_is_recorded_once(cluster_ctx, dataset):
    ctx = cluster_ctx
    # 8 epochs: a rank still training after the first checkpoint, on a fast machine too
    job = submit(ctx, spec(dataset, epochs=8, max_restarts=1))
    job = wait_for_training(ctx, job, '"type":"checkpoint"')
    folder = ctx.manager.folder(job.id).path
    training_processes(folder)[1].send_signal(signal.SIGKILL)
    job = tick_until(ctx, job.id, ended, timeout=300)
    assert job.status == "done", job.error
    log = JobFolder(folder).log.read_text()
    assert "was killed by SIGKILL; resuming from the last checkpoint (restart 1 of 1)" in log
    assert "resuming" in log.split("restart 1 of 1", 1)[1]  # the training resumed from its checkpoint
    detail = job_detail(ctx.manager, job).as_json()
    assert [e for e, _ in detail["metrics"]["val_accuracy"]] == list(range(1, 9))
    assert detail["snapshots"] == list(range(1, 9))


def thread_niceness(pid: int) -> set[int]:
    """The niceness of every thread of ``pid`` (Linux keeps one per thread)."""
    return {psutil.Process(int(tid)).nice() for tid in os.listdir(f"/proc/{pid}/task")
            if os.path.exists(f"/proc/{pid}/task/{tid}")}


def test_a_ranks_ray_worker_runs_at_the_launchers_niceness_and_a_slow_one_is_waited_for(cluster_ctx, dataset):
    ctx = cluster_ctx
    job = submit(ctx, spec(dataset, workers=1, epochs=6))
    (rank,) = wait_for_ranks(ctx, job, 1).values()
    actor = ray_worker_of(rank)  # it answers the launcher's polls
    launcher = os.getpriority(os.PRIO_PROCESS, 0)  # the job manager's: the launcher inherits it
    if os.geteuid() == 0:  # lowering Ray's niceness (15) needs root; elsewhere the job says so
        assert thread_niceness(actor.pid) == {launcher} and rank.nice() == launcher
    else:
        assert "could not give the training processes niceness" in JobFolder(ctx.manager.folder(job.id).path) \
            .log.read_text()
    # A worker silent past the 10 s a cut-off node gets, on a node that answers: slow, not lost.
    from trainyard.cluster.liveness import ANSWER_S

    actor.send_signal(signal.SIGSTOP)
    try:
        silent_until = time.monotonic() + ANSWER_S + 5  # not a bound: how long it is kept silent
        while time.monotonic() < silent_until:
            ctx.manager.tick()
            time.sleep(0.25)
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):  # taken for lost and killed (the failure below)
            actor.send_signal(signal.SIGCONT)
    job = tick_until(ctx, job.id, ended, timeout=300)
    assert job.status == "done", job.error
