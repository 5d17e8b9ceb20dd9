"""The backend in /api/system, ``trainyard system`` and the system page; a cluster job's workers
on its page; and ``--max-restarts`` / ``--processes`` of a cluster job as they reach its spec."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from trainyard.cli.main import app as cli
from trainyard.core.files import read_json
from trainyard.core.formatting import clock
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
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


NODES = [{"id": "abcdef12" + "0" * 48, "host": "gpu-a", "ip": "10.0.0.1", "alive": True, "head": True, "cpus": 4,
          "cpus_in_use": 1, "gpus": [{"index": 0, "name": "NVIDIA H200", "memory_total": 141 * 2**30}],
          "gpus_in_use": 1, "memory_total": 2**36, "jobs": ["job-1"]},
         {"id": "99887766" + "0" * 48, "host": "gpu-b", "ip": "10.0.0.2", "alive": False, "head": False, "cpus": 8,
          "cpus_in_use": None, "gpus": [], "gpus_in_use": None, "memory_total": 2**36, "jobs": [],
          "died_at": "2026-05-04T10:00:01+00:00"}]


def test_cluster_mode_reports_the_nodes_in_the_api_the_cli_and_the_page(settings, cli_env, monkeypatch):
    import trainyard.cluster.nodes

    monkeypatch.setattr(trainyard.cluster.nodes, "list_nodes", lambda: NODES)
    app = create_app(settings.model_copy(update={"cluster": "ray"}), pools=Pools(1, 1, []), run_scheduler=False)
    with TestClient(app) as client:
        doc = client.get("/api/system").json()
        html = client.get("/system").text
    assert doc["backend"] == "ray" and doc["nodes"] == NODES
    assert 'data-backend="ray"' in html and 'id="system-nodes"' in html
    env = {**cli_env, "TRAINYARD_CLUSTER": "ray"}
    result = CliRunner().invoke(cli, ["system"], env=env)
    assert result.exit_code == 0, result.output
    assert "backend: ray" in result.output
    assert "node gpu-a (abcdef12) alive: 1/4 CPUs, 1/1 GPUs in use (NVIDIA H200); jobs job-1" in result.output
    died = clock(datetime.fromisoformat(NODES[1]["died_at"]).timestamp())  # in this machine's time zone
    assert f"node gpu-b (99887766) DEAD since {died} (" in result.output and " ago): " in result.output
    assert json.loads(CliRunner().invoke(cli, ["system", "--json"], env=env).stdout)["nodes"] == NODES


def test_the_machines_cpu_use_is_measured_from_the_first_reading():
    """Issue 22: /system said the CPU was idle on a busy machine (psutil's first reading is 0.0)."""
    import subprocess
    import sys
    import time

    from trainyard.jobs.views.hardware import CpuMeter

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the loop is running
        meter = CpuMeter()
        first = meter.percent()
        assert first >= 100 / (os.cpu_count() or 1) / 2, first  # at least half a core of the loop
        assert meter.percent() == first  # asked again at once: the same reading, not a 5 ms window
    finally:
        busy.kill()
        busy.wait()


def test_the_human_system_report_gives_versions_who_holds_each_slot_and_free_disk(client, cli_env):
    """`trainyard system` without --json says what the System page says, from the same report."""
    from importlib import metadata

    ctx = client.app.state.ctx
    busy = ctx.manager.create("model", "busy flowers", {"name": "busy flowers"}, needs={"pool": "cpu"})
    assert ctx.store.try_lease(busy.id, ["cpu:0"])
    result = CliRunner().invoke(cli, ["system"], env=cli_env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    versions = next(line for line in lines if line.startswith("versions: "))
    for package in ("torch", "torchvision"):
        assert f"{package} {metadata.version(package)}" in versions
    assert "trainyard " in versions and "python 3." in versions
    assert f"CPU training slot 1: busy flowers (job {busy.id})" in lines
    assert "Dataset build slot 1: free" in lines
    disk = next(line for line in lines if line.startswith("disk: "))
    assert "GiB free of" in disk and disk.endswith(str(ctx.settings.home))


def test_the_human_system_report_lists_every_setting_and_hides_the_secrets(cli_env):
    """`trainyard system` lists each TRAINYARD_* setting with its value here (settings.py is the
    one place they are read); the token and the database URL only as set or not."""
    from trainyard.settings import Settings

    env = {**cli_env, "TRAINYARD_JOIN_TIMEOUT_S": "75", "TRAINYARD_AUTH_TOKEN": "a-long-enough-secret-token"}
    result = CliRunner().invoke(cli, ["system"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    listed = lines[lines.index("settings:") + 1:]
    assert [line.split("=")[0].strip() for line in listed] == [f"TRAINYARD_{n.upper()}" for n in Settings.model_fields]
    assert any(line.startswith("  TRAINYARD_JOIN_TIMEOUT_S=75.0  (how long") for line in listed)
    assert "  TRAINYARD_AUTH_TOKEN=set" in listed and "a-long-enough-secret-token" not in result.stdout
