"""Confinement is decided from the store's record of a job (jobs/store/confinement.py), written
when the server created it, never from the job's folder (issue 28 point 2): a custom job that
rewrites its spec.json stays confined and gains no read nor TCP; an inference job of a custom
model is confined like the model; a job older than the record is confined, never the reverse."""

from __future__ import annotations

import json

import pytest

from trainyard.core.status import Status
from trainyard.jobs.runs.sandbox import sandboxed
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox.policy import Policy

SOURCE = "def build(num_classes, in_channels, image_size): ..."


@pytest.fixture(autouse=True)
def kernel_sandbox(monkeypatch):
    monkeypatch.setattr(sandbox, "require", lambda: True)


def policy_of(command: list[str]) -> Policy | None:
    """The policy a sandboxed command runs under; None when it runs unconfined."""
    return Policy.from_json(command[3]) if command[:3] == [command[0], "-m", "trainyard.sandbox.supervisor"] else None


def command_of(ctx, job_id: str, gpus: int = 0) -> list[str]:
    job = ctx.store.get_job(job_id)
    facts = confinement_record.recall(ctx.store, job, ctx.settings.jobs_dir)
    return sandboxed(["python", "-m", "trainyard.training.run", "x"], ctx.manager.folder(job_id), list(range(gpus)),
                     facts)


def model_job(ctx, tmp_path, source: str | None) -> str:
    data = tmp_path / "data" / "d1"
    data.mkdir(parents=True, exist_ok=True)
    spec = {"name": "m", "network": None if source else "lenet", "network_source": source,
            "dataset_dir": str(data), "processes": 1}
    return ctx.manager.create("model", "m", spec, needs={"pool": "cpu"}).id


def test_a_custom_job_that_rewrites_its_spec_stays_confined_and_gains_nothing(ctx, tmp_path):
    job_id = model_job(ctx, tmp_path, SOURCE)
    spec = ctx.manager.folder(job_id).spec
    # What a hostile network writes into its own folder before the job is resumed:
    spec.write_text(json.dumps({"network": "lenet", "network_source": None, "dataset_dir": str(ctx.settings.home),
                                "pretrained": "/", "processes": 4, "nnodes": 3}))
    policy = policy_of(command_of(ctx, job_id))
    assert policy is not None, "ran unconfined because its spec.json said it was a standard network"
    assert str(ctx.settings.home) not in policy.read and "/" not in policy.read
    assert str(tmp_path / "data" / "d1") in policy.read
    assert policy.network is False and str(ctx.settings.home) in policy.hidden


def test_a_standard_job_runs_unconfined_and_a_recorded_placement_opens_tcp(ctx, tmp_path):
    assert policy_of(command_of(ctx, model_job(ctx, tmp_path, None))) is None
    custom = model_job(ctx, tmp_path, SOURCE)
    recorded = confinement_record.recall(ctx.store, ctx.store.get_job(custom), ctx.settings.jobs_dir)
    confinement_record.record(ctx.store, custom, confinement_record.Confinement(
        **{**recorded.__dict__, "processes": 2}))  # as a resume with --processes 2 records it
    assert policy_of(command_of(ctx, custom)).network is True


def test_an_inference_job_of_a_custom_model_is_confined_reading_its_checkpoint(ctx, tmp_path):
    model = model_job(ctx, tmp_path, SOURCE)
    checkpoint = ctx.manager.folder(model).checkpoints / "epoch-0001.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"a checkpoint")
    images = tmp_path / "data" / "images"
    images.mkdir(parents=True)
    spec = {"kind": "classify-many", "model_id": model, "checkpoint": str(checkpoint), "folder": str(images),
            "epoch": 1}  # no network_source: an inference spec never had one
    job = ctx.manager.create("classify-many", "c", spec, needs={"pool": "inference"})
    policy = policy_of(command_of(ctx, job.id))
    assert policy is not None, "an inference job ran a custom network unconfined"
    assert str(checkpoint.parent) in policy.read and str(images) in policy.read
    folder = ctx.manager.folder(job.id)  # it writes its work folder, and only reads its spec
    assert str(folder.work) in policy.write and str(folder.path) not in policy.write
    assert str(folder.spec) in policy.read and policy.report_dir == str(folder.work)
    standard = model_job(ctx, tmp_path, None)
    plain = ctx.manager.create("classify-many", "c", {**spec, "model_id": standard}, needs={"pool": "inference"})
    assert policy_of(command_of(ctx, plain.id)) is None


def test_a_job_older_than_the_record_is_confined_and_a_dataset_build_is_not(ctx, tmp_path):
    old = Job(id="old-model", kind="model", name="old", status=Status.QUEUED, parent_id="d0", needs={"pool": "cpu"},
              summary={})
    ctx.store.add_job(old)
    (ctx.settings.jobs_dir / "old-model").mkdir(parents=True)
    policy = policy_of(command_of(ctx, "old-model"))
    assert policy is not None and str(ctx.settings.jobs_dir / "d0" / "dataset") in policy.read
    build = ctx.manager.create("dataset", "d", {"name": "d"}, needs={"pool": "dataset"})
    assert policy_of(command_of(ctx, build.id)) is None


def test_the_record_goes_with_its_job(ctx, tmp_path):
    job_id = model_job(ctx, tmp_path, SOURCE)
    ctx.store.delete_job(job_id)
    with ctx.store.session() as s:
        assert s.get(confinement_record.ConfinementRow, job_id) is None
