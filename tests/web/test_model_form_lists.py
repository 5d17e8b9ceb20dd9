"""The new-model form offers only what can train on the chosen dataset (issue 46.9): its task's
networks, and previous models that have a snapshot, have ended and are of its task (the others
greyed with the reason); one "Start from" control chooses where the weights come from.

Jobs are written straight into the store (no scheduler); a snapshot is a file in the job's
checkpoints folder, which is all the form reads of a job folder.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tests.web.test_pages_models import GPUS, add_dataset, add_model
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app


@pytest.fixture
def client(settings):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=GPUS), run_scheduler=False)
    with TestClient(app) as client:
        yield client


@pytest.fixture
def ctx(client):
    return client.app.state.ctx


def page(client, query: str) -> str:
    answer = client.get(f"/models/new?{query}")
    assert answer.status_code == 200
    return answer.text


def with_snapshot(ctx, job):
    checkpoints = ctx.manager.folder(job.id).checkpoints
    checkpoints.mkdir(parents=True)
    (checkpoints / "epoch-0002.pt").write_bytes(b"weights")
    return job


def networks_shown(html: str) -> dict[str, bool]:
    """Standard network -> whether its row is shown (not ``hidden``)."""
    rows = re.findall(r'<tr data-network="([^"]+)" data-task="[^"]+"( hidden)?', html)
    return {name: not hidden for name, hidden in rows}


def previous_offered(html: str) -> dict[str, str]:
    """Previous model id -> "" where it can be chosen, else the reason the page greys it with."""
    select = html.split('name="previous_job"', 1)[1].split("</select>", 1)[0]
    out = {}
    for attributes, text in re.findall(r'<option value="([^"]+"[^>]*)>([^<]*)</option>', select):
        job_id = attributes.split('"', 1)[0]
        disabled = " disabled" in attributes
        out[job_id] = text.rsplit(": ", 1)[1] if disabled else ""
    return out


@pytest.fixture
def home(ctx):
    """A classification and a detection dataset, and model jobs of every kind the list must sort."""
    digits = add_dataset(ctx, "digits")
    shapes = add_dataset(ctx, "shapes", task="detection", width=64, height=64)
    jobs = {
        "classifier": with_snapshot(ctx, add_model(ctx, digits, "classifier", status="done")),
        "aborted-early": add_model(ctx, digits, "aborted-early", status="aborted"),
        "still-running": with_snapshot(ctx, add_model(ctx, digits, "still-running", status="running")),
        "detector": with_snapshot(ctx, add_model(ctx, shapes, "detector", status="done",
                                                 spec={"network": "fasterrcnn_mobilenet_v3_large_fpn",
                                                       "task": "detection"})),
    }
    return digits, shapes, {name: job.id for name, job in jobs.items()}


def test_a_classification_dataset_lists_classifiers_and_the_classifier_it_can_fine_tune(client, home):
    digits, _, ids = home
    html = page(client, f"dataset={digits.id}")
    shown = networks_shown(html)
    assert shown["lenet"] and shown["alexnet"]
    assert not shown["fasterrcnn_mobilenet_v3_large_fpn"] and not shown["yolo_n"] and not shown["unet_resnet18"]
    assert previous_offered(html) == {ids["classifier"]: "", ids["aborted-early"]: "no snapshot",
                                      ids["still-running"]: "still training", ids["detector"]: "a detector"}
    assert re.search(r'<option value="" data-task="classification">a classifier</option>', html)
    assert re.search(r'<option value="fcos" data-task="detection" hidden disabled>', html)


def test_a_detection_dataset_lists_detectors_and_greys_the_classifiers(client, home):
    _, shapes, ids = home
    html = page(client, f"dataset={shapes.id}")
    shown = networks_shown(html)
    assert shown["fasterrcnn_mobilenet_v3_large_fpn"] and shown["yolo_n"]
    assert not shown["lenet"] and not shown["unet_resnet18"]
    offered = previous_offered(html)
    assert offered[ids["detector"]] == "" and offered[ids["classifier"]] == "a classifier"
    assert 'data-network-task="detection"' in html  # the script re-filters from it on another choice
    assert re.search(r'<option value="" data-task="classification" hidden disabled>a classifier', html)


def test_one_control_chooses_the_starting_point(client, home):
    digits, _, _ = home
    html = page(client, f"dataset={digits.id}")
    starts = re.findall(r'name="start" value="(\w+)"( checked)?', html)
    assert [value for value, _ in starts] == ["scratch", "store", "previous", "file"]
    assert [value for value, checked in starts if checked] == ["scratch"]
    assert 'data-tab="previous"' not in html and 'data-tab="pretrained"' not in html
    assert 'name="pretrained_job"' not in html and 'id="pretrained-fieldset"' not in html


def test_a_clone_starts_where_its_job_started(client, ctx, home):
    digits, _, ids = home
    checkpoint = ctx.manager.folder(ids["classifier"]).checkpoints / "epoch-0002.pt"
    tuned = add_model(ctx, digits, "tuned", status="done", spec={"pretrained": str(checkpoint)})
    html = page(client, f"clone={tuned.id}")
    assert re.search(r'name="start" value="previous" checked', html)
    assert re.search(rf'<option value="{ids["classifier"]}"[^>]* selected>', html)
    assert 'name="previous_epoch" value="2"' in html
    from_file = add_model(ctx, digits, "from-file", status="done", spec={"pretrained": "/data/w.safetensors"})
    html = page(client, f"clone={from_file.id}")
    assert re.search(r'name="start" value="file" checked', html)
    assert 'name="pretrained_file" value="/data/w.safetensors"' in html
