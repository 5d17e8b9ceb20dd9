"""Where a job runs is the deployment's choice, not the client's (issue 19 item 5): a server
records its backend in the store, ``train --submit`` from a shell without TRAINYARD_CLUSTER
queues a cluster job for a cluster-mode server, and a foreground ``train`` against that store
that cannot join the cluster is refused with the reason (never a silent local run)."""

from __future__ import annotations

import json
import socket

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.files import read_json
from trainyard.core.status import Status
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.deployment import record_backend, recorded_backend
from trainyard.web.app import create_app

# The submitting shell: no cluster settings of its own.
PLAIN_SHELL = {"TRAINYARD_CLUSTER": None, "RAY_ADDRESS": None, "TRAINYARD_FAKE_GPUS": "0"}


def _train(cli_env, *args, **env):
    ctx_env = {**cli_env, **PLAIN_SHELL, **env}
    return CliRunner().invoke(app, ["train", "--network", "lenet", "--json", *args], env=ctx_env)


def _dataset(settings) -> str:
    ctx = open_context(settings)
    return ctx.manager.create("dataset", "d", {}, needs={"pool": "dataset"}).id  # queued is enough


def _one_line(result) -> str:
    return " ".join(result.output.split())


def test_a_server_records_its_backend_when_it_starts(ctx, settings):
    assert recorded_backend(ctx.store) is None  # no server has started on this store
    ray_settings = settings.model_copy(update={"cluster": "ray"})
    with TestClient(create_app(ray_settings, warm_networks=False)):
        assert recorded_backend(ctx.store) == "ray"
    with TestClient(create_app(settings, warm_networks=False)):  # a later server decides anew
        assert recorded_backend(ctx.store) == "local"


def test_a_job_submitted_from_a_plain_shell_to_a_cluster_server_asks_for_cluster_workers(ctx, settings, cli_env):
    record_backend(ctx.store, "ray")
    dataset = _dataset(settings)
    result = _train(cli_env, "--dataset", dataset, "--submit")
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["jobs"]
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cluster", "device": "cpu", "count": 1}
    assert read_json(ctx.manager.folder(job["id"]).spec)["cluster"] == {"workers": 1, "device": "cpu"}
    result = _train(cli_env, "--dataset", dataset, "--submit", "--processes", "2")
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["jobs"]
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cluster", "device": "cpu", "count": 2}


def test_a_job_submitted_to_a_local_server_stays_local(ctx, settings, cli_env):
    record_backend(ctx.store, "local")
    result = _train(cli_env, "--dataset", _dataset(settings), "--submit")
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["jobs"]
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cpu"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


@pytest.mark.parametrize("ray_address, reason", [
    (None, "RAY_ADDRESS is not set here"),
    ("closed", "no Ray cluster reachable at RAY_ADDRESS=127.0.0.1:"),
])
def test_a_foreground_train_that_cannot_join_the_cluster_is_refused_with_the_reason(
        ctx, settings, cli_env, ray_address, reason):
    record_backend(ctx.store, "ray")
    address = f"127.0.0.1:{_closed_port()}" if ray_address == "closed" else None
    result = _train(cli_env, "--dataset", _dataset(settings), RAY_ADDRESS=address)
    assert result.exit_code == 2, result.output
    said = _one_line(result)
    assert "this store's server trains on its Ray cluster" in said and reason in said
    assert "--submit" in said
    assert ctx.store.list_jobs(kind="model") == []  # nothing created, nothing run here


def test_a_store_made_before_these_tables_gains_them_and_keeps_its_jobs(database_url):
    from sqlalchemy import text

    from trainyard.jobs.runs import heartbeat
    from trainyard.jobs.store.store import Job, Store

    store = Store(database_url)
    store.add_job(Job(id="j1", kind="model", name="old", status="done", needs={}, summary={}))
    with store.engine.begin() as connection:  # what a trainyard from before issue 19 made
        connection.execute(text("DROP TABLE holders"))
        connection.execute(text("DROP TABLE deployment"))
    store = Store(database_url)
    assert store.get_job("j1").name == "old"
    assert recorded_backend(store) is None
    record_backend(store, "ray")
    heartbeat.renew(store, "node-a", 7, started=1.0)
    assert recorded_backend(store) == "ray" and heartbeat.last_beat(store, "node-a", 7) is not None


def _ended_model_job(ctx, needs: dict, processes: int = 1):
    job = ctx.manager.create("model", "ran", {"name": "ran", "processes": processes}, needs={"pool": "cpu"})
    ctx.store.update_job(job.id, status=Status.FAILED, error="interrupted", needs=needs)  # GPUs of another machine
    return job


def _resume(cli_env, job_id, *args, **env):
    return CliRunner().invoke(app, ["jobs", "resume", job_id, "--json", *args], env={**cli_env, **PLAIN_SHELL, **env})


@pytest.mark.parametrize("args", [["--processes", "2"], ["--gpus", "1"], []])
def test_a_foreground_resume_that_cannot_join_the_cluster_is_refused_with_the_reason(ctx, cli_env, args):
    """Issue 19 item 5 for ``jobs resume``: before, ``--processes 2`` trained here with torchrun."""
    record_backend(ctx.store, "ray")
    job = _ended_model_job(ctx, {"pool": "cpu"})
    result = _resume(cli_env, job.id, *args)
    assert result.exit_code == 2, result.output
    said = _one_line(result)
    assert "this store's server trains on its Ray cluster" in said and "RAY_ADDRESS is not set here" in said
    after = ctx.store.get_job(job.id)
    assert (after.status, after.needs) == (Status.FAILED, {"pool": "cpu"})  # not started, not changed


@pytest.mark.parametrize("args, needs, processes", [
    (["--processes", "2"], {"pool": "cpu"}, 1),
    (["--gpus", "2"], {"pool": "cpu"}, 1),
    ([], {"pool": "cpu"}, 3),  # a job that ran here keeps its size: 3 processes -> 3 workers
    ([], {"pool": "gpu", "ids": [0, 1]}, 1),
])
def test_a_resume_submitted_to_a_cluster_server_continues_on_the_cluster(ctx, cli_env, args, needs, processes):
    record_backend(ctx.store, "ray")
    job = _ended_model_job(ctx, needs, processes)
    result = _resume(cli_env, job.id, "--submit", *args)
    assert result.exit_code == 0, result.output
    device, count = ("gpu", 2) if "--gpus" in args or needs["pool"] == "gpu" else ("cpu", 3 if processes == 3 else 2)
    assert ctx.store.get_job(job.id).needs == {"pool": "cluster", "device": device, "count": count}
    assert read_json(ctx.manager.folder(job.id).spec)["cluster"] == {"workers": count, "device": device}


def test_a_resume_against_a_local_store_stays_local(ctx, cli_env):
    record_backend(ctx.store, "local")
    job = _ended_model_job(ctx, {"pool": "cpu"}, processes=2)
    result = _resume(cli_env, job.id, "--submit")
    assert result.exit_code == 0, result.output
    assert ctx.store.get_job(job.id).needs == {"pool": "cpu"}
