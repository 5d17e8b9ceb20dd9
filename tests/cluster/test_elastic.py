"""Elastic cluster jobs (``min_workers``) on the session's Ray cluster of two one-CPU nodes: a node
removed mid-run, the job continues from its last checkpoint on the one worker left, accumulating
two batches per step, and grows back to two workers at an epoch boundary once a node returns.
Its losses are those of the uninterrupted run (one process at the global batch: the 2-worker
run's own, test_cluster_jobs.py), to float rounding: LeNet has no batch norm, so two
accumulated batches on one worker are the two ranks' all-reduced mean.

The pauses are the checkpoint writer's documented hook (TRAINYARD_CHECKPOINT_HOLD): the job
waits at a checkpoint's rename while the test removes or adds a node.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

from tests.cluster.conftest import NODE_ARGS
from tests.cluster.test_cluster_jobs import (  # noqa: F401 (fixture)
    TOLERANCE,
    dataset,
    ended,
    spec,
    submit,
    tick_until,
    training_processes,
)
from tests.training.model_helpers import make_dataset, metrics, one_thread, write_job
from trainyard.cluster.elastic import fitting, sizes
from trainyard.core import fence
from trainyard.core.events import read_events
from trainyard.core.paths import checkpoint_name
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.views.documents import job_detail
from trainyard.training.run import main as train_in_process


@pytest.fixture
def own_cluster(ray_env, settings, monkeypatch):
    """A cluster of this test's own (a head without CPUs and two one-CPU nodes): it loses a node
    and gains another, which the session's cluster must not (the node list shows the dead one)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **NODE_ARGS})
    nodes = [cluster.add_node(num_cpus=1, **NODE_ARGS) for _ in range(2)]
    cluster.wait_for_nodes()
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    ctx = open_context(settings.model_copy(update={"cluster": "ray", "abort_grace_s": 10.0}),
                       pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    try:
        yield cluster, nodes, ctx
    finally:
        cluster.shutdown()


def asks_for(work, workers: int) -> bool:
    """Whether the launcher asks the job's ranks (through the fence) to stop for ``workers``."""
    state = fence.read(work)
    return state is not None and state.resize == workers


def holding(tmp_path, monkeypatch, *epochs: int):
    """A folder that pauses the jobs' checkpoint writes of ``epochs`` (the writer's test hook)
    until the test removes their hold files."""
    hold = tmp_path / "hold"
    hold.mkdir()
    monkeypatch.setenv("TRAINYARD_CHECKPOINT_HOLD", str(hold))
    for epoch in epochs:
        (hold / f"{checkpoint_name(epoch)}.hold").touch()
    return hold


def last_per_epoch(job_dir, name: str) -> dict[float, float]:
    """Each epoch's last reported value (a resumed run reports the epochs after its checkpoint again)."""
    return dict(metrics(job_dir, name))


def test_an_elastic_job_runs_on_divisors_of_its_size_as_large_as_the_free_workers_hold():
    assert sizes(8, 1) == [8, 4, 2, 1] and sizes(6, 2) == [6, 3, 2]
    assert fitting(4, 1, free=3) == 2  # 3 of 4 left: 2 workers, 2 batches per step each
    assert fitting(4, 2, free=1) == 2  # below the minimum: wait for it


def test_one_worker_of_an_elastic_two_worker_job_trains_the_two_workers_steps(tmp_path):
    """The maths without Ray: the job's one rank accumulates 2 batches of 8 per step, which is
    the 2-rank all-reduce of batches of 8, hence one process at batch 16."""
    data = make_dataset(tmp_path / "ds", train=64, val=16, size=16)
    elastic = write_job(tmp_path / "elastic", spec(data, epochs=3, min_workers=1))
    whole = write_job(tmp_path / "whole", spec(data, workers=0, batch_size=16, epochs=3))
    with one_thread():
        assert train_in_process(elastic) == 0 and train_in_process(whole) == 0
    assert "2 batches of 8" not in (elastic / "log.txt").read_text()  # a fresh run: nothing resumed
    for name in ("train_loss", "val_loss", "lr"):
        ours, theirs = metrics(elastic, name), metrics(whole, name)
        assert [e for e, _ in ours] == [e for e, _ in theirs], name
        assert np.allclose([v for _, v in ours], [v for _, v in theirs], rtol=0, atol=TOLERANCE), (name, ours)


@pytest.mark.slow
def test_an_elastic_job_shrinks_to_the_node_left_and_grows_back_with_the_losses_of_the_whole_run(
        own_cluster, dataset, tmp_path, monkeypatch):  # noqa: F811
    cluster, nodes, ctx = own_cluster
    hold = holding(tmp_path, monkeypatch, 2, 5)
    job = submit(ctx, spec(dataset, epochs=8, min_workers=1), "elastic")
    folder = ctx.manager.folder(job.id).work
    log = folder / "log.txt"

    tick_until(ctx, job.id, lambda j: ended(j) or (hold / f"{checkpoint_name(2)}.writing").exists())
    lost = job_detail(ctx.manager, ctx.store.get_job(job.id)).as_json()["workers"][1]["node_id"]
    index = next(i for i, node in enumerate(nodes) if node.node_id == lost)
    cluster.remove_node(nodes[index])  # mid-run, epoch 2's checkpoint not yet complete
    shrunk = tick_until(ctx, job.id, lambda j: ended(j) or "on 1 of 2 workers" in log.read_text())
    assert shrunk.status == "running", shrunk.error
    (hold / f"{checkpoint_name(2)}.hold").unlink()

    tick_until(ctx, job.id, lambda j: ended(j) or (hold / f"{checkpoint_name(5)}.writing").exists())
    cluster.add_node(num_cpus=1, **NODE_ARGS)  # a node returns
    asked = tick_until(ctx, job.id, lambda j: ended(j) or (asks_for(folder, 2) and j))
    assert asked.status == "running", asked.error  # the launcher asks for 2 again, the job waits at epoch 5
    (hold / f"{checkpoint_name(5)}.hold").unlink()
    done = tick_until(ctx, job.id, ended, timeout=300)
    assert done.status == "done", done.error
    tables = shrunk_and_grew_back_as_the_whole_run(ctx, done, dataset, tmp_path)
    assert [len(hosts) for hosts in tables] == [2, 1, 2]  # the workers table, at each change


def shrunk_and_grew_back_as_the_whole_run(ctx, done, data, tmp_path) -> list[list[str]]:
    """Check that the 8-epoch 2-worker job ``done`` said it shrank to one worker and grew back,
    kept every snapshot, and trained each epoch as one process at the global batch (16); the
    hosts of its workers table at each change."""
    work = ctx.manager.folder(done.id).work
    text = (work / "log.txt").read_text()
    assert "continuing from the last checkpoint on 1 of 2 workers, with the same global batch (elastic)" in text
    assert "2 batches of 8 per optimizer step: the same global batch of 16 images (elastic)" in text
    assert "growing back to 2 of 2 workers" in text
    assert job_detail(ctx.manager, done).as_json()["snapshots"] == [1, 2, 3, 4, 5, 6, 7, 8]
    reference = write_job(tmp_path / "whole", spec(data, workers=0, batch_size=16, epochs=8))
    with one_thread():
        assert train_in_process(reference) == 0
    for name in ("train_loss", "val_loss", "val_accuracy"):
        ours, theirs = last_per_epoch(work, name), last_per_epoch(reference, name)
        assert list(ours) == list(theirs), name
        assert np.allclose(list(ours.values()), list(theirs.values()), rtol=0, atol=TOLERANCE), (name, ours, theirs)
    return [[w["host"] for w in e["workers"]] for e in read_events(work / "events.jsonl", {"summary"})
            if "workers" in e]


@pytest.mark.slow
def test_an_elastic_job_whose_training_process_is_killed_on_a_node_that_answers_restarts_at_its_size(
        own_cluster, dataset, tmp_path, monkeypatch):  # noqa: F811
    """No node was lost (the kernel's OOM killer, a crash): an elastic job does not shrink onto a
    node that is still there, which, never counted, would let a crash that recurs go round for
    ever; it restarts at its size against --max-restarts, and with none left fails saying why."""
    cluster, nodes, ctx = own_cluster
    hold = holding(tmp_path, monkeypatch, 2, 3)
    job = submit(ctx, spec(dataset, epochs=4, min_workers=1, max_restarts=1), "crashes")
    folder = ctx.manager.folder(job.id)

    def at_checkpoint(epoch: int) -> None:  # then kill rank 1's training process
        tick_until(ctx, job.id, lambda j: ended(j) or (hold / f"{checkpoint_name(epoch)}.writing").exists())
        training_processes(folder.path)[1].send_signal(signal.SIGKILL)  # its node lives on

    at_checkpoint(2)
    again = tick_until(ctx, job.id, lambda j: ended(j) or "restart 1 of 1" in folder.log.read_text())
    assert again.status == "running", again.error
    (hold / f"{checkpoint_name(2)}.hold").unlink()
    at_checkpoint(3)
    (hold / f"{checkpoint_name(3)}.hold").unlink()
    failed = tick_until(ctx, job.id, ended, timeout=300)
    assert failed.status == "failed"
    assert failed.error.startswith("training process rank 1 on node") and "was killed by SIGKILL (its node still " \
        "answers: an elastic job goes on with fewer workers only when one is lost; --max-restarts N restarts it " \
        "after a crash)" in failed.error, failed.error
    text = folder.log.read_text()
    assert "was killed by SIGKILL; resuming from the last checkpoint (restart 1 of 1)" in text
    assert "of 2 workers" not in text  # never shrunk
    sizes = [len(e["workers"]) for e in read_events(folder.events, {"summary"}) if "workers" in e]
    assert sizes == [2, 2]
