"""``GET /api/jobs/compare``, the /compare page and ``trainyard jobs compare``, on model jobs whose
events are written here (what a training run writes: metric events per epoch)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from trainyard.cli.main import app as cli
from trainyard.core.events import EventWriter
from trainyard.jobs.store.labels import set_labels


def add_run(ctx, dataset_id: str, name: str, lr: float, accuracy: list[float], status: str = "done",
            epochs: int | None = None) -> str:
    """A model job that trained len(accuracy) epochs (of ``epochs``): its spec and the events a run writes."""
    spec = {"name": name, "dataset_id": dataset_id, "dataset_dir": "/nowhere", "network": "lenet",
            "epochs": epochs or len(accuracy), "batch_size": 16, "lr": {"policy": "fixed", "base_lr": lr}}
    job = ctx.manager.create("model", name, spec, needs={"pool": "cpu"}, parent_id=dataset_id, group="sweep")
    events = EventWriter(ctx.manager.folder(job.id).work)  # where the job writes (core/paths.py)
    for epoch, value in enumerate(accuracy, 1):
        events.emit("metric", epoch=epoch, name="train_loss", value=1.0 / epoch)
        events.emit("metric", epoch=epoch, name="lr", value=lr)
        events.emit("metric", epoch=epoch, name="val_accuracy", value=value)
    ctx.store.update_job(job.id, status=status)
    return job.id


@pytest.fixture
def runs(idle_app) -> dict:
    ctx = idle_app.state.ctx
    dataset = ctx.manager.create("dataset", "digits", {"name": "digits"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    return {"dataset": dataset.id,
            "fast": add_run(ctx, dataset.id, "fast", 0.1, [60.0, 90.0, 85.0]),
            "slow": add_run(ctx, dataset.id, "slow", 1e-4, [50.0, 52.0])}


def test_the_document_holds_settings_differences_best_final_and_curves(idle_client, runs):
    doc = idle_client.get(f"/api/jobs/compare?ids={runs['fast']},{runs['slow']}").json()
    assert [j["id"] for j in doc["jobs"]] == [runs["fast"], runs["slow"]]
    fast, slow = doc["jobs"]
    assert fast["name"] == "fast" and fast["status"] == "done"
    assert fast["best"] == {"epoch": 2, "val_accuracy": 90.0}
    assert fast["final"]["val_accuracy"] == 85.0 and fast["final"]["epoch"] == 3
    assert slow["settings"]["lr.base_lr"] == 1e-4 and fast["settings"]["network"] == "lenet"
    assert doc["differs"] == ["epochs", "lr.base_lr"]  # network, batch size, policy are the same
    assert doc["series"][runs["slow"]]["val_accuracy"] == [[1, 50.0], [2, 52.0]]
    assert doc["series"][runs["fast"]]["lr"] == [[1, 0.1], [2, 0.1], [3, 0.1]]


@pytest.mark.parametrize("ids, status, words", [
    ("", 400, "at least one"),
    (",,", 400, "at least one"),
    ("nosuchjob", 404, "no job with id 'nosuchjob'"),
    ("DATASET", 400, "only model"),
    (",".join(f"j{i}" for i in range(21)), 400, "at most 20"),
])
def test_bad_id_lists_get_one_line_4xx(idle_client, runs, ids, status, words):
    response = idle_client.get("/api/jobs/compare", params={"ids": ids.replace("DATASET", runs["dataset"])})
    assert response.status_code == status
    detail = response.json()["detail"]
    assert words in detail and "\n" not in detail


def test_one_run_and_a_repeated_id_are_fine(idle_client, runs):
    doc = idle_client.get(f"/api/jobs/compare?ids={runs['fast']},{runs['fast']}").json()
    assert len(doc["jobs"]) == 1 and doc["differs"] == []


def test_the_page_links_each_run_and_highlights_what_differs(idle_client, runs):
    html = idle_client.get(f"/compare?ids={runs['fast']},{runs['slow']}").text
    assert f'href="/models/{runs["fast"]}"' in html and f'href="/models/{runs["slow"]}"' in html
    # The job page's labels, the spec's name in the title (issue 31.6)
    assert '<th class="sortable differs" data-type="auto" title="lr.base_lr">Base learning rate</th>' in html
    assert '<tr class="differs"><th title="epochs">Training epochs</th>' in html
    assert '<tr><th title="network">Network</th>' in html
    assert idle_client.get("/compare?ids=nosuchjob").status_code == 404


def test_the_cli_prints_the_document_or_a_table_of_what_differs(idle_app, runs, settings):
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(cli, ["jobs", "compare", runs["fast"], runs["slow"], "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["differs"] == ["epochs", "lr.base_lr"]
    result = CliRunner().invoke(cli, ["jobs", "compare", runs["fast"], runs["slow"]], env=env)
    header, fast, slow = result.stdout.splitlines()
    assert header.split()[:3] == ["id", "epochs", "lr.base_lr"]
    assert fast.split()[:3] == [runs["fast"], "3", "0.1"] and "90" in fast
    assert slow.split()[:3] == [runs["slow"], "2", "0.0001"]
    result = CliRunner().invoke(cli, ["jobs", "compare", runs["dataset"]], env=env)
    assert result.exit_code == 2 and "only model" in result.stderr


def test_the_cli_compares_a_sweep_by_its_name_and_shows_notes(idle_app, runs, settings):
    """Issue 31.7: a sweep's name stands for its runs, best first; notes get a column."""
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    set_labels(idle_app.state.ctx.store, runs["slow"], notes="too slow to learn\nin 2 epochs")
    result = CliRunner().invoke(cli, ["jobs", "compare", "sweep", "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [j["id"] for j in doc["jobs"]] == [runs["fast"], runs["slow"]]
    assert doc["jobs"][1]["notes"] == "too slow to learn\nin 2 epochs"
    header, fast, slow = CliRunner().invoke(cli, ["jobs", "compare", "sweep"], env=env).stdout.splitlines()
    assert header.split()[-1] == "notes" and slow.endswith("too slow to learn in 2 epochs")
    missing = CliRunner().invoke(cli, ["jobs", "compare", "no sweep"], env=env)
    assert missing.exit_code == 2 and "no job with id 'no sweep' and no sweep of that name" in missing.stderr


def test_the_home_list_offers_to_compare_a_sweep(idle_client, runs):
    html = idle_client.get("/?group=sweep").text
    assert f'<a class="compare-sweep" href="/compare?ids={runs["slow"]},{runs["fast"]}">' in html
    assert 'id="compare-selected"' in idle_client.get("/").text
