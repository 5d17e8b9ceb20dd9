"""A detector's pages speak of detecting (issue 41's page mends): its model page, its detect-many
job's page and title, its score to three significant digits, and captions that wrap, not cut."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import open_client
from tests.jobs.test_stored_specs import OLD_MODEL_SPEC
from trainyard.core.events import EventWriter
from trainyard.core.formatting import best_score_text
from trainyard.core.status import Status
from trainyard.jobs.kinds.inference import job_name
from trainyard.jobs.store.store import Job

STATIC = Path(__file__).parents[2] / "src" / "trainyard" / "web" / "static"
DETECTOR = {**OLD_MODEL_SPEC, "id": "m-detector", "name": "a weak detector", "task": "detection",
            "network": "ssdlite320_mobilenet_v3_large"}
MANY = {"version": 1, "kind": "classify-many", "id": "c-many", "name": "detect-many images: a weak detector @ epoch 2",
        "model_id": "m-detector", "checkpoint": "/srv/m-detector/checkpoints/epoch-2.pt", "epoch": 2,
        "task": "detection", "image_folder": "/data/photos"}


def _add(settings, client, spec: dict, kind: str, parent: str | None) -> Path:
    folder = settings.jobs_dir / spec["id"]
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(spec))
    client.app.state.ctx.store.add_job(Job(id=spec["id"], kind=kind, name=spec["name"], status=Status.DONE,
                                           needs={"pool": "cpu"}, summary={}, parent_id=parent))
    return folder


def test_a_weak_detectors_best_map_shows_three_significant_digits():
    assert best_score_text({"epoch": 2, "val_map50": 0.004}) == "mAP@0.5 0.004"
    assert best_score_text({"epoch": 2, "val_map50": 0.004123}) == "mAP@0.5 0.00412"
    assert best_score_text({"epoch": 2, "val_map50": 0.8237}) == "mAP@0.5 0.824"
    assert best_score_text({"epoch": 2, "val_accuracy": 87.5}) == "87.50%"


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the page's chart module")
def test_the_charts_best_marker_shows_a_fraction_to_three_digits_and_a_percentage_as_one():
    script = ("import { charts } from './charts.js';"
              "console.log(charts.scoreText(0.004, ''), charts.scoreText(0.82371, ''), charts.scoreText(87.5, '%'));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=STATIC, capture_output=True,
                         text=True, timeout=30, check=True).stdout.split()
    assert out == ["0.004", "0.824", "87.50%"]


def test_a_detectors_model_page_says_detect_and_its_best_map(settings):
    with open_client(settings, run_scheduler=False) as client:
        folder = _add(settings, client, DETECTOR, "model", "d-old")
        (folder / "work").mkdir(exist_ok=True)
        with EventWriter(folder / "work") as events:
            events.emit("metric", name="val_map50", epoch=2, value=0.004)
        page = client.get("/models/m-detector")
    assert page.status_code == 200
    assert ">Detect</a>" in page.text and ">Classify</a>" not in page.text
    assert "Best val. mAP@0.5" in page.text and "mAP@0.5 0.004" in page.text and "0.00%" not in page.text
    assert 'data-boxes="true"' in page.text


def test_a_detect_many_page_is_titled_detect_many_and_leads_back_to_detect(settings):
    with open_client(settings, run_scheduler=False) as client:
        _add(settings, client, DETECTOR, "model", "d-old")
        _add(settings, client, MANY, "classify-many", "m-detector")
        page = client.get("/models/m-detector/classify-many/c-many")
    assert page.status_code == 200
    assert "detect-many c-many" in page.text and "back to detect<" in page.text and "back to classify" not in page.text


def test_a_detectors_many_image_job_is_named_detect_many():
    assert job_name("classify-many", "detection", "photos", "ssd", 2.0) == "detect-many photos: ssd @ epoch 2"
    assert job_name("classify-many", "classification", "images", "lenet", 1.5).startswith("classify-many images")
    assert job_name("evaluate", "detection", "val", "ssd", 2.0).startswith("evaluate val")


def test_image_captions_wrap_rather_than_being_cut():
    css = (STATIC / "app.css").read_text()
    rule = next(line for line in css.splitlines() if line.startswith(".image-grid figcaption"))
    assert "nowrap" not in rule and "ellipsis" not in rule
