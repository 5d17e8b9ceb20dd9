"""The home page tables, the new-model form (and Clone), the model page and its live-data APIs.

Jobs are written straight into the store (no scheduler), so these run in a second and the
page contents are exactly known.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from fastapi.testclient import TestClient

from tests.jobs.test_hardware import FakeNVML, devices
from trainyard.jobs.scheduling.resources import GPU, Pools
from trainyard.jobs.views.hardware import Hardware
from trainyard.web.app import create_app

GPUS = [GPU(0, "Fake H100", 80 * 2**30), GPU(1, "Fake T4", 16 * 2**30)]


@pytest.fixture
def app(settings, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=GPUS), run_scheduler=False)
    app.state.hardware = Hardware(FakeNVML(devices()))
    return app


@pytest.fixture
def client(app):
    with TestClient(app) as client:
        yield client


def add_dataset(ctx, name="digits", status="done", **summary):
    job = ctx.manager.create("dataset", name, {"name": name}, needs={"pool": "dataset"})
    summary = {"classes": ["a", "b"], "images": {"train": 15, "val": 5}, "width": 28, "height": 28,
               "channels": 1, **summary}
    ctx.store.update_job(job.id, status=status, summary=summary)
    return job


def add_model(ctx, dataset, name="model", status="queued", spec=None, needs=None, group=None, **fields):
    spec = {"name": name, "dataset_id": dataset.id, "dataset_dir": "/nowhere", "network": "lenet",
            **(spec or {})}
    job = ctx.manager.create("model", name, spec, needs=needs or {"pool": "gpu", "count": 1},
                             parent_id=dataset.id, group=group)
    ctx.store.update_job(job.id, status=status, **fields)
    return job


def rows(html: str, table: str) -> list[str]:
    """The job ids of a table's rows, in order."""
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr data-job="([^"]+)"', body)


# -- home ------------------------------------------------------------------------------------------

def test_home_lists_datasets_and_models_with_status_progress_best_and_gpus(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx, skipped_total=3)
    queued = add_model(ctx, ds, "q-model")
    waiting = add_model(ctx, ds, "w-model", status="waiting", status_detail="waiting for GPUs")
    running = add_model(ctx, ds, "r-model", status="running", progress=0.25, eta=95.0, started_at=time.time() - 30,
                        summary={"resources": ["gpu:0", "gpu:1"], "epoch": 2.5,
                                 "best": {"epoch": 2, "val_accuracy": 91.25}})
    html = client.get("/").text
    assert rows(html, "datasets-table") == [ds.id]
    assert set(rows(html, "models-table")) == {queued.id, waiting.id, running.id}
    for status in ("queued", "waiting", "running"):
        assert f'class="status status-{status}"' in html
    assert "waiting for GPUs" in html
    assert "25.0%" in html and "ETA 1m 35s" in html
    assert "91.25%" in html and "epoch 2" in html
    assert "GPU 0, GPU 1" in html
    assert ">3<" in html  # skipped files of the dataset
    assert f'href="/datasets/{ds.id}">digits</a>' in html  # the model's dataset, by name


def test_home_says_what_a_run_that_cannot_learn_shows(app, client):
    ctx = app.state.ctx
    finding = "validation accuracy has stayed at chance level (50.0% with 2 classes, 3 validations)"
    add_model(ctx, add_dataset(ctx), name="stuck", status="running", summary={"epoch": 3, "diagnosis": [finding]})
    assert f'class="small error-text clip diagnosis" title="{finding}">{finding}</div>' in client.get("/").text


def test_home_filters_sorts_and_groups_and_the_refresh_keeps_the_query(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    b = add_model(ctx, ds, "beta", status="done", group="sweep1")
    a = add_model(ctx, ds, "alpha", status="running", group="sweep1")
    c = add_model(ctx, ds, "gamma", status="failed", error="diverged")
    assert rows(client.get("/?sort=name&order=asc").text, "models-table") == [a.id, b.id, c.id]
    assert rows(client.get("/?sort=name&order=desc").text, "models-table") == [c.id, b.id, a.id]
    assert rows(client.get("/?q=ALP").text, "models-table") == [a.id]
    assert rows(client.get("/?status=ended&sort=name&order=asc").text, "models-table") == [b.id, c.id]
    assert rows(client.get("/?status=active").text, "models-table") == [a.id]
    filtered = client.get("/partials/jobs?q=gam").text
    assert rows(filtered, "models-table") == [c.id] and "1 of 3" in filtered
    assert "No dataset matches the filter" in filtered
    grouped = client.get("/partials/jobs?group=sweep&sort=name&order=asc").text
    assert "sweep sweep1" in grouped and "single jobs" in grouped
    assert rows(grouped, "models-table") == [a.id, b.id, c.id]
    # A hand-edited URL with nonsense falls back to the defaults instead of failing.
    assert client.get("/?sort=nope&order=sideways&group=x&status=y").status_code == 200


def test_home_reads_no_job_folder(app, client, monkeypatch):
    """The listing must come from the database alone (fast with thousands of jobs)."""
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    add_model(ctx, ds, status="done", summary={"best": {"epoch": 1, "val_accuracy": 50.0}})

    def no_reads(*args, **kwargs):
        raise AssertionError("the home page read a job file")

    monkeypatch.setattr("trainyard.jobs.kinds.registry.read_events", no_reads)
    monkeypatch.setattr("trainyard.core.jobfiles.open_beneath", no_reads)  # every job-file read opens here
    assert client.get("/").status_code == 200
    assert client.get("/partials/jobs").status_code == 200


# -- new model -------------------------------------------------------------------------------------

def test_new_model_form_offers_datasets_networks_solvers_and_gpus(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx, "usable")
    broken = add_dataset(ctx, "broken", status="failed")
    html = client.get(f"/models/new?dataset={ds.id}").text
    assert f'value="{ds.id}" id="ds-{ds.id}" checked' in html
    assert broken.id not in html
    for network in ("lenet", "alexnet", "googlenet"):
        assert f'name="network" value="{network}"' in html and f'class="customize" data-network="{network}"' in html
    for solver in ("sgd", "nesterov", "adagrad", "adam"):
        assert f'<option value="{solver}"' in html
    assert 'name="lr_policy"' in html and 'data-uses="step_percent,gamma"' in html
    assert "GPU 0: Fake H100 (80 GiB)" in html and "GPU 1: Fake T4 (16 GiB)" in html
    for field in ("batch_size", "accumulation", "epochs", "snapshot_interval", "val_interval", "seed",
                  "crop", "mean", "flip", "rotate_degrees", "previous_job", "pretrained_file", "start"):
        assert f'name="{field}"' in html
    assert "vendor/codemirror/codemirror.js" in html and "vendor/codemirror/python.js" in html


def test_new_model_form_preselects_the_datasets_recommended_network(app, client):
    ctx = app.state.ctx
    digits = add_dataset(ctx, "digits")  # 28x28: LeNet, a tabled network
    assert 'name="network" value="lenet" id="net-lenet" checked' in client.get(f"/models/new?dataset={digits.id}").text
    shapes = add_dataset(ctx, "shapes", width=64, height=64, images={"train": 400})
    html = client.get(f"/models/new?dataset={shapes.id}").text
    assert 'data-timm-networks="timm:resnet10t"' in html and 'id="net-lenet" checked' not in html


def test_clone_fills_the_form_with_the_jobs_settings(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    spec = {"epochs": 12, "batch_size": 16, "accumulation": 2, "solver": "nesterov", "seed": 7, "crop": 24,
            "mean": "pixel", "lr": {"policy": "exp", "base_lr": 0.05, "gamma": 0.95},
            "augment": {"flip": "lr", "rotate_degrees": 10.0, "quarter_turns": True}, "val_interval": 0.5}
    job = add_model(ctx, ds, "original", status="aborted", spec=spec, needs={"pool": "gpu", "ids": [1]})
    html = client.get(f"/models/new?clone={job.id}").text
    assert f'href="/models/{job.id}">original</a>' in html
    assert 'name="name" value="original-2"' in html  # a new name, proposed
    assert f'value="{ds.id}" id="ds-{ds.id}" checked' in html
    assert 'value="lenet" id="net-lenet" checked' in html
    for field, value in (("epochs", "12"), ("batch_size", "16"), ("accumulation", "2"), ("seed", "7"),
                         ("crop", "24"), ("base_lr", "0.05"), ("gamma", "0.95"), ("val_interval", "0.5"),
                         ("rotate_degrees", "10")):
        assert f'name="{field}" value="{value}"' in html, field
    assert '<option value="nesterov" selected' in html
    assert '<option value="exp" selected' in html
    assert '<option selected>pixel</option>' in html
    assert '<option value="lr" selected>' in html
    assert 'name="quarter_turns" checked' in html
    assert 'name="gpu_mode" value="ids" checked' in html and 'name="gpu_id" value="1" checked' in html
    assert client.get("/models/new?clone=nope").status_code == 404


def test_clone_of_a_custom_network_opens_the_editor_with_its_source(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    source = "from torch import nn\n\ndef build(num_classes, in_channels, image_size):\n    return nn.Linear(1, 1)\n"
    job = add_model(ctx, ds, "custom", spec={"network": None, "network_source": source})
    html = client.get(f"/models/new?clone={job.id}").text
    assert 'name="network_mode" value="custom"' in html
    assert "def build(num_classes, in_channels, image_size):" in html


# -- model page ------------------------------------------------------------------------------------

def test_model_page_shows_actions_snapshots_and_settings(app, client, settings):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    job = add_model(ctx, ds, "shown", status="done", spec={"epochs": 3, "lr": {"policy": "step", "base_lr": 0.02}})
    folder = ctx.manager.folder(job.id)
    folder.checkpoints.mkdir()
    for epoch in (1, 2.5):
        name = f"epoch-{int(epoch):04d}{'.5' if epoch == 2.5 else ''}.pt"
        (folder.checkpoints / name).write_bytes(b"x")
    with open(folder.events, "a") as f:
        for epoch in (1, 2.5):
            f.write(json.dumps({"type": "checkpoint", "time": 0, "epoch": epoch, "path": "x"}) + "\n")
    html = client.get(f"/models/{job.id}").text
    assert f'href="/models/{job.id}/classify"' in html
    assert f'href="/api/models/{job.id}/download?epoch=2.5"' in html
    assert f'href="/api/models/{job.id}/download?epoch=1"' in html
    assert f'href="/models/new?clone={job.id}"' in html
    for button in ("abort-button", "resume-button", "delete-button"):
        assert f'id="{button}"' in html
    assert "<h3>Solver</h3>" in html and "<span>Base learning rate</span><span>0.02</span>" in html
    assert 'id="chart-main"' in html and 'id="chart-lr"' in html and 'id="hardware"' in html
    assert "/static/vendor/uplot/uPlot.iife.min.js" in html
    assert client.get(f"/models/{ds.id}").status_code == 404  # a dataset is not a model


def test_hardware_api_gives_the_gpus_a_running_job_holds_and_its_cpu(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    job = add_model(ctx, ds, status="running", pid=os.getpid(), started_at=time.time(),
                    summary={"resources": ["gpu:1"]})
    doc = client.get(f"/api/jobs/{job.id}/hardware").json()
    assert doc["status"] == "running"
    assert [(g["index"], g["name"], g["temperature"]) for g in doc["gpus"]] == [(1, "Fake T4", 40)]
    assert doc["cpu"]["processes"] >= 1 and doc["cpu"]["percent"] >= 0 and doc["cpu"]["rss"] > 0
    ended = add_model(ctx, ds, status="done")
    doc = client.get(f"/api/jobs/{ended.id}/hardware").json()
    assert doc["gpus"] == [] and doc["cpu"] is None
    assert client.get("/api/jobs/nope/hardware").status_code == 404


def test_system_api_has_live_gpu_figures_and_leases(app, client):
    ctx = app.state.ctx
    ctx.store.try_lease("job-x", ["gpu:0"])
    doc = client.get("/api/system").json()
    first = doc["gpus"][0]
    assert first["label"] == "GPU 0: Fake H100 (80 GiB)" and first["job"] == "job-x"
    assert first["utilization"] == 97 and first["memory_used"] == 61 * 2**30 and first["power"] == pytest.approx(412.3)
    assert doc["cpu"]["count"] >= 1 and doc["memory"]["total"] > 0


def test_events_resume_after_the_later_of_after_and_last_event_id(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    job = add_model(ctx, ds, status="done")
    with open(ctx.manager.folder(job.id).events, "a") as f:
        for i in range(6):
            f.write(json.dumps({"type": "metric", "time": 0, "epoch": i, "name": "train_loss", "value": i}) + "\n")

    def ids(url, **headers):
        text = client.get(url, headers=headers).text
        return [int(i) for i in re.findall(r"^id: (\d+)$", text, re.M)]

    assert ids(f"/api/jobs/{job.id}/events") == [0, 1, 2, 3, 4, 5]
    assert ids(f"/api/jobs/{job.id}/events?after=1") == [2, 3, 4, 5]
    # A browser reconnecting to the ?after= URL sends Last-Event-ID: nothing may come twice.
    assert ids(f"/api/jobs/{job.id}/events?after=1", **{"Last-Event-ID": "3"}) == [4, 5]
    assert ids(f"/api/jobs/{job.id}/events", **{"Last-Event-ID": "4"}) == [5]


def test_model_page_and_json_give_the_batch_an_auto_job_chose(app, client):
    ctx = app.state.ctx
    ds = add_dataset(ctx)
    job = add_model(ctx, ds, "auto", status="done", spec={"batch_size": "auto"}, summary={"batch_size": 24})
    html = client.get(f"/models/{job.id}").text
    assert re.search(r'<span id="stat-batch"[^>]*>24</span>', html)
    detail = client.get(f"/api/jobs/{job.id}").json()
    assert detail["batch_size"] == 24 and detail["spec"]["batch_size"] == "auto"
    fixed = add_model(ctx, ds, "fixed", status="queued", spec={"batch_size": 16})
    assert client.get(f"/api/jobs/{fixed.id}").json()["batch_size"] == 16
    default = add_model(ctx, ds, "default", status="queued")  # lenet's own
    assert client.get(f"/api/jobs/{default.id}").json()["batch_size"] == 64
