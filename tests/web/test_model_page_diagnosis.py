"""A model's page and its JSON say when its training cannot learn (issue 46.2): the findings of
training/diagnosis.py that the job's events carry, in plain words with what to try.

The events are written as the training loop writes them (a summary after each validation) and
folded into the job's row as the server folds a running job's events; nothing trains.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.web.test_pages_models import GPUS, add_dataset, add_model
from trainyard.core.events import EventTail
from trainyard.jobs.runs.progress import fold_events
from trainyard.jobs.scheduling.resources import Pools
from trainyard.training.diagnosis import diagnose
from trainyard.web.app import create_app


@pytest.fixture
def client(settings):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=GPUS), run_scheduler=False)
    with TestClient(app) as client:
        yield client


def trained(ctx, name: str, accuracies: list[float]):
    """A running job whose validations so far read ``accuracies`` (2 classes), its events folded."""
    job = add_model(ctx, add_dataset(ctx), name, status="running")
    folder = ctx.manager.folder(job.id)
    metrics: dict[str, list[list[float]]] = {}
    with open(folder.events, "a") as events:
        for epoch, accuracy in enumerate(accuracies, start=1):
            metrics.setdefault("val_accuracy", []).append([epoch, accuracy])
            metrics.setdefault("train_loss", []).append([epoch, 0.7])
            findings = [f.text for f in diagnose(metrics, classes=2, base_lr=0.01)]
            for metric, value in (("val_accuracy", accuracy), ("train_loss", 0.7)):
                events.write(json.dumps({"type": "metric", "time": 0, "name": metric, "epoch": epoch,
                                         "value": value}) + "\n")
            events.write(json.dumps({"type": "summary", "time": 0, "epoch": epoch, "val_accuracy": accuracy,
                                     "diagnosis": findings}) + "\n")
    fold_events(ctx.store, ctx.store.get_job(job.id), EventTail(folder.events))
    return job


def test_a_model_stuck_at_chance_says_so_on_its_page_with_what_to_try(client):
    job = trained(client.app.state.ctx, "stuck", [50.0, 50.0, 50.0, 50.0])
    html = client.get(f"/models/{job.id}").text
    card = html.split('id="diagnosis"', 1)[1].split("</section>", 1)[0]
    assert not card.startswith(" hidden")
    assert "This training is not learning well" in card
    assert "<li>Validation accuracy has stayed at chance level (50.0% with 2 classes, 4 validations)" in card
    assert "Try fine-tuning from pretrained weights" in card and "a lower learning rate (now 0.01)" in card
    findings = client.get(f"/api/jobs/{job.id}").json()["diagnosis"]
    assert len(findings) == 1 and findings[0].startswith("validation accuracy has stayed at chance level")


def test_a_model_that_learns_shows_no_diagnosis(client):
    job = trained(client.app.state.ctx, "learning", [55.0, 70.0, 85.0])
    html = client.get(f"/models/{job.id}").text
    assert 'id="diagnosis" hidden' in html and "<li>" not in html.split('id="diagnosis"', 1)[1].split("</section>")[0]
    assert client.get(f"/api/jobs/{job.id}").json()["diagnosis"] == []
