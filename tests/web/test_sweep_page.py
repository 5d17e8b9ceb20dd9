"""A sweep's page (/sweeps?group=NAME) and ``GET /api/sweeps``: its runs and their states, the
best so far, what early stopping stopped and when, and the compare view of the group."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.web.test_compare import add_run
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.labels import set_labels
from trainyard.web.app import create_app

MESSAGE = "stopped early at epoch 1: bottom of 2 at this point"
DIAGNOSIS = "the training loss grew from 2.3 to 2.4e+03: the training is diverging"


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
    ctx.store.update_job(running, summary={"early_stop": True, "diagnosis": [DIAGNOSIS]})
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
    assert f'class="error-text clip diagnosis" title="{DIAGNOSIS}">' in html  # issue 46, point 2
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


def test_the_list_of_sweeps_gives_each_its_runs_best_status_and_notes(client):
    ctx = client.app.state.ctx
    set_labels(ctx.store, client.ids["good"], notes="lr 0.1 wins by far")
    html = client.get("/sweeps", headers={"Accept": "text/html"}).text
    assert '<a href="/sweeps">Sweeps</a>' in html  # the header links the list
    row = html.split('data-sweep="sweep"', 1)[1].split("</tr>", 1)[0]
    assert '<a href="/sweeps?group=sweep">sweep</a>' in row
    assert "3<div" in row and "2 done, 1 running" in row
    assert "95.00%" in row and f'href="/models/{client.ids["good"]}">good</a>' in row
    assert "status-running" in row and "lr 0.1 wins by far" in row
    sweep_page = client.get("/sweeps", params={"group": "sweep"}).text
    assert "lr 0.1 wins by far" in sweep_page.split('id="sweep-runs"', 1)[1].split("</table>", 1)[0]


def test_with_no_sweep_the_list_says_how_to_make_one(settings):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    with TestClient(app) as client:
        html = client.get("/sweeps").text
    assert 'id="no-sweeps"' in html and "several learning rates" in html


def test_the_api_lists_every_sweep_as_the_page_does(client):
    """``GET /api/sweeps`` without a group: a line per sweep, newest first (it was a 422)."""
    ctx = client.app.state.ctx
    set_labels(ctx.store, client.ids["good"], notes="lr 0.1 wins by far")
    answer = client.get("/api/sweeps")
    assert answer.status_code == 200, answer.text
    [line] = answer.json()["sweeps"]
    assert (line["name"], line["runs"], line["status"]) == ("sweep", 3, "running")
    assert line["counts"] == {"done": 2, "running": 1}
    assert line["best"]["id"] == client.ids["good"] and line["best"]["best"]["val_accuracy"] == 95.0
    assert line["notes"] == [{"id": client.ids["good"], "name": "good", "notes": "lr 0.1 wins by far"}]
    assert client.get("/api/sweeps", params={"group": "sweep"}).json()["name"] == "sweep"  # one, as before


def test_with_no_sweep_the_api_list_is_empty(settings):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    with TestClient(app) as client:
        assert client.get("/api/sweeps").json() == {"sweeps": []}
