"""The backend in /api/system, ``trainyard system`` and the system page; a cluster job's workers
on its page; and ``--max-restarts`` / ``--processes`` of a cluster job as they reach its spec."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from trainyard.cli.main import app as cli
from trainyard.core.files import read_json
from trainyard.jobs.context import open_context
from trainyard.jobs.resources import Pools
from trainyard.web.app import create_app

WORKERS = [{"rank": 0, "node_id": "3f2a9c1e" + "0" * 48, "host": "gpu-node-7", "ip": "10.0.0.7", "device": "gpu:2",
            "actor": "trainyard-x-0-0"}]


@pytest.fixture
def client(settings):
    app = create_app(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    with TestClient(app) as client:
        yield client


def test_local_backend_in_the_api_the_cli_and_the_system_page(client, cli_env):
    doc = client.get("/api/system").json()
    assert doc["backend"] == "local" and "nodes" not in doc
    html = client.get("/system").text
    assert 'data-backend="local"' in html and "/static/system.js" in html and 'id="system-nodes"' not in html
    result = CliRunner().invoke(cli, ["system", "--json"], env=cli_env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "local" and report["cpu"]["count"] >= 1 and "nodes" not in report


def test_a_cluster_jobs_page_lists_where_its_ranks_run(client):
    ctx = client.app.state.ctx
    dataset = ctx.manager.create("dataset", "d", {"name": "d"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["a", "b"]})
    spec = {"name": "m", "dataset_id": dataset.id, "dataset_dir": "/nowhere", "network": "lenet",
            "cluster": {"workers": 1, "device": "gpu"}}
    job = ctx.manager.create("model", "m", spec, needs={"pool": "cluster", "device": "gpu", "count": 1},
                             parent_id=dataset.id)
    ctx.store.update_job(job.id, status="done", summary={"workers": WORKERS})
    assert client.get(f"/api/jobs/{job.id}").json()["workers"] == WORKERS
    html = client.get(f"/models/{job.id}").text
    section = html.split('id="workers"', 1)[1].split("</section>", 1)[0]
    assert "gpu-node-7" in section and ">3f2a9c1e<" in section and "gpu:2" in section


def test_cluster_job_options_reach_the_spec_and_needs(settings, cli_env):
    ctx = open_context(settings)
    dataset = ctx.manager.create("dataset", "d", {}, needs={"pool": "dataset"})
    env = {**cli_env, "TRAINYARD_CLUSTER": "ray"}
    result = CliRunner().invoke(cli, ["train", "--dataset", dataset.id, "--network", "lenet", "--submit", "--json",
                                      "--processes", "4", "--max-restarts", "2"], env=env)
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)["jobs"][0]
    spec = read_json(ctx.manager.folder(job["id"]).spec)
    assert (spec["cluster"], spec["max_restarts"]) == ({"workers": 4, "device": "cpu"}, 2)
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cluster", "device": "cpu", "count": 4}
    local = CliRunner().invoke(cli, ["train", "--dataset", dataset.id, "--network", "lenet", "--submit",
                                     "--max-restarts", "1"], env=cli_env)
    assert local.exit_code == 2 and "max_restarts applies to cluster jobs" in local.output
