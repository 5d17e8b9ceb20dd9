"""Elastic jobs (``min_workers``) on a real multi-host cluster (tests/cluster/netns.py): a host
killed mid-run (its Ray node and the rank on it, SIGKILL), the job goes on from its last
checkpoint on the one host left, accumulating two batches per step, and grows back to both hosts
at an epoch boundary once the host's Ray is started again (a new node). Its losses are those of
the uninterrupted run (one process at the global batch) to float rounding, as on the one-machine
cluster (tests/cluster/test_elastic.py), where a node leaves cleanly.

Here Ray counts the killed host alive, with its CPU free, until its health checks fail: the
launcher must not take that CPU for a place to continue on or to grow back to.

The pauses are the checkpoint writer's documented hook (TRAINYARD_CHECKPOINT_HOLD, which the
fixture's servers are given): the job waits at a checkpoint's rename while the test kills or
starts a host.
"""

from __future__ import annotations

import pytest

from tests.cluster.netns import ray_start
from tests.cluster.test_cluster_jobs import spec
from tests.cluster.test_elastic import asks_for, shrunk_and_grew_back_as_the_whole_run
from tests.cluster.test_netns_hosts import cluster, dataset, final, queue  # noqa: F401 (fixtures)
from tests.conftest import wait_for
from trainyard.core.paths import checkpoint_name
from trainyard.jobs.views.documents import job_detail

pytestmark = pytest.mark.slow


def test_an_elastic_job_goes_on_without_a_killed_host_and_grows_back_when_it_returns(cluster, dataset, tmp_path):  # noqa: F811
    hosts, ctx, root = cluster
    hold = root / "hold"
    for epoch in (2, 5):
        (hold / f"{checkpoint_name(epoch)}.hold").touch()
    job = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=8, min_workers=1), "elastic")
    work = ctx.manager.folder(job.id).work
    log = work / "log.txt"

    def running(until) -> bool:  # ``until`` holds, or the job ended (then the assertion says how)
        return ctx.store.get_job(job.id).status.is_final or until()

    assert wait_for(lambda: running((hold / f"{checkpoint_name(2)}.writing").exists), 240)
    workers = job_detail(ctx.manager, ctx.store.get_job(job.id)).as_json()["workers"]
    assert sorted(w["host"] for w in workers) == ["ty-w1", "ty-w2"], workers
    hosts.kill("ray-w2")  # its Ray node and the rank on it, mid-run (epoch 2's checkpoint not complete)
    assert wait_for(lambda: running(lambda: "on 1 of 2 workers" in log.read_text()), 240)
    assert ctx.store.get_job(job.id).status == "running", ctx.store.get_job(job.id).error
    (hold / f"{checkpoint_name(2)}.hold").unlink()

    assert wait_for(lambda: running((hold / f"{checkpoint_name(5)}.writing").exists), 240)
    ray_start(hosts, "w2")  # the host returns
    assert wait_for(lambda: running(lambda: asks_for(work, 2)), 240), ctx.store.get_job(job.id).error
    (hold / f"{checkpoint_name(5)}.hold").unlink()
    done = final(ctx, job.id, timeout=300)
    assert done.status == "done", (done.error, log.read_text()[-3000:])

    tables = shrunk_and_grew_back_as_the_whole_run(ctx, done, dataset, tmp_path)
    assert [len(t) for t in tables] == [2, 1, 2] and tables[1] == ["ty-w1"], tables  # on the host left
