"""Inference jobs never queue behind training: slots of their own on a machine without GPUs,
a free or shared GPU on one with GPUs; a waiting job names what it waits for."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for
from trainyard.core.files import read_json
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.inference import create_inference_job
from trainyard.jobs.scheduling.resources import Pools, fake_gpus


def hold(ctx, kind: str, name: str, resource: str):
    """A queued job that holds ``resource`` (as if it ran), without a process."""
    job = ctx.manager.create(kind, name, {}, needs={"pool": "cpu"})
    assert ctx.store.try_lease(job.id, [resource])
    return job


def waiting_detail(ctx, kind: str, needs: dict) -> str:
    job = ctx.manager.create(kind, f"{kind}-waits", {}, needs=needs)
    ctx.manager.starting.try_start(ctx.store.get_job(job.id))
    job = ctx.store.get_job(job.id)
    assert job.status == "waiting"
    return job.status_detail


def test_inference_has_its_own_cpu_slots_and_says_what_it_waits_for(settings):
    ctx = open_context(settings, pools=Pools(1, 1, [], inference_slots=1))
    training = hold(ctx, "model", "lenet-long", "cpu:0")
    assert ctx.pools.acquire(ctx.store, "x", {"pool": "inference"}) == ["inference:0"]  # beside the training
    assert waiting_detail(ctx, "model", {"pool": "cpu"}) == (
        f"waiting for job {training.id} (model lenet-long) to free the CPU")
    many = ctx.store.leases()["inference:0"]
    assert waiting_detail(ctx, "evaluate", {"pool": "inference"}) == (
        f"waiting for job {many} to finish: 1 inference job run at once beside training (TRAINYARD_INFERENCE_JOBS)")


def test_the_setting_gives_the_inference_slots(settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_INFERENCE_JOBS", "2")
    ctx = open_context(type(settings)(home=settings.home, data_roots=settings.data_roots))
    assert ctx.pools.acquire(ctx.store, "a", {"pool": "inference"}) == ["inference:0"]
    assert ctx.pools.acquire(ctx.store, "b", {"pool": "inference"}) == ["inference:1"]
    assert ctx.pools.acquire(ctx.store, "c", {"pool": "inference"}) is None


def test_on_gpus_inference_takes_a_free_gpu_else_shares_a_busy_one(settings):
    ctx = open_context(settings, pools=Pools(1, 1, fake_gpus(2)))
    first = hold(ctx, "model", "on-gpu-0", "gpu:0")
    assert ctx.pools.acquire(ctx.store, "free", {"pool": "inference"}) == ["gpu:1"]
    assert ctx.pools.acquire(ctx.store, "shares", {"pool": "inference"}) == ["gpushare:0"]
    assert Pools.gpu_ids(["gpushare:0"]) == [0]  # the runner shows the job that GPU
    assert ctx.pools.acquire(ctx.store, "shares-too", {"pool": "inference"}) == ["gpushare:1"]
    detail = waiting_detail(ctx, "classify-many", {"pool": "inference"})
    assert detail.startswith("waiting for a GPU: each is in use and already shared with an inference job")
    assert waiting_detail(ctx, "model", {"pool": "gpu", "ids": [0]}) == (
        f"waiting for GPU 0: job {first.id} (model on-gpu-0) holds it")


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_classify_many_runs_while_a_cpu_training_runs(trained, database_url):
    """A long LeNet training holds the machine's one CPU slot; a classify-many job of the
    trained model starts and finishes meanwhile, and the training runs on."""
    ctx = open_context(trained.settings, pools=Pools(1, 1, [], inference_slots=1))
    spec = read_json(ctx.manager.folder(trained.model_id).spec)
    spec = {**spec, "name": "long lenet", "epochs": 500, "snapshot_interval": 500, "pretrained": None}
    training = ctx.manager.create("model", "long lenet", spec, needs={"pool": "cpu"},
                                  parent_id=trained.dataset_id)

    def status(job_id):
        ctx.manager.tick()
        return ctx.store.get_job(job_id).status

    try:
        wait_for(lambda: status(training.id) == "running", timeout=120)
        many = create_inference_job(ctx, "classify-many", trained.model_id, folder=str(trained.images))
        wait_for(lambda: status(many.id) in ("done", "failed", "aborted"), timeout=600, interval=0.3)
        many = ctx.store.get_job(many.id)
        assert many.status == "done", many.error
        assert many.summary["resources"] == ["inference:0"]
        assert status(training.id) == "running"  # it never gave up the CPU slot
    finally:
        ctx.manager.abort(training.id)
        wait_for(lambda: status(training.id) in ("aborted", "done", "failed"), timeout=120)
