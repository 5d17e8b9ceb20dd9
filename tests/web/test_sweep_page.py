"""A sweep's page (/sweeps?group=NAME) and ``GET /api/sweeps``: its runs and their states, the
best so far, what early stopping stopped and when, and the compare view of the group."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.web.test_compare import add_run
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app

MESSAGE = "stopped early at epoch 1: bottom of 2 at this point"


@pytest.fixture
def client(settings):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    ctx = app.state.ctx
    dataset = ctx.manager.create("dataset", "digits", {"name": "digits"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    good = add_run(ctx, dataset.id, "good", 0.1, [60.0, 90.0, 95.0])
    bad = add_run(ctx, dataset.id, "bad", 1e-6, [30.0], epochs=3)
    running = add_run(ctx, dataset.id, "later", 0.01, [], status="running")
    ctx.store.update_job(good, summary={"early_stop": True, "epoch": 3, "best": {"epoch": 3, "val_accuracy": 95.0}})
    ctx.store.update_job(bad, status_detail=MESSAGE, summary={
        "early_stop": True, "epoch": 1, "best": {"epoch": 1, "val_accuracy": 30.0},
        "stopped_early": {"epoch": 1, "point": 1, "of": 2, "rank": 2, "message": MESSAGE}})
    ctx.store.update_job(running, summary={"early_stop": True})
    with TestClient(app) as client:
        client.ids = {"good": good, "bad": bad, "later": running}
        yield client


def test_the_sweep_document_counts_states_the_best_and_what_was_stopped(client):
    doc = client.get("/api/sweeps", params={"group": "sweep"}).json()
    assert [r["name"] for r in doc["runs"]] == ["good", "bad", "later"]
    assert doc["counts"] == {"done": 2, "running": 1}
    assert doc["best"]["id"] == client.ids["good"]
    assert doc["stopped"] == 1 and doc["epochs_saved"] == 2  # "bad" stopped after 1 of 3 epochs
    stopped = next(r for r in doc["runs"] if r["stopped"])
    assert stopped["id"] == client.ids["bad"] and stopped["stopped"]["epoch"] == 1
    assert doc["compare_ids"][:2] == [client.ids["good"], client.ids["bad"]]


def test_the_sweep_page_lists_runs_and_shows_the_compare_view(client):
    html = client.get("/sweeps", params={"group": "sweep"}).text
    assert "Sweep sweep" in html and MESSAGE in html
    assert 'id="compare-table"' in html and 'id="chart-val_accuracy"' in html
    assert f'data-ids="{client.ids["good"]},{client.ids["bad"]},{client.ids["later"]}"' in html
    assert html.split('id="sweep-stopped">', 1)[1].startswith("1, 2 epochs saved")


def test_an_unknown_sweep_is_404(client):
    answer = client.get("/api/sweeps", params={"group": "nothing"})
    assert answer.status_code == 404 and answer.json()["detail"] == "no sweep named 'nothing'"
    assert client.get("/sweeps?group=nothing").status_code == 404


def test_the_home_list_says_which_runs_were_stopped_early(client):
    row = client.get("/").text.split(f'data-job="{client.ids["bad"]}"', 1)[1].split("</tr>", 1)[0]
    assert MESSAGE in row
