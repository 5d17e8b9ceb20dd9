"""Training a classification network on a detection dataset (or a detector on a classification
dataset) is refused in one line about the dataset: its task and what to pick instead, from the
CLI (exit 2), the API (422, also the New model form's check) and before any job is made."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from tests.conftest import make_image_folder
from tests.detection_data import make_shapes_dataset
from trainyard.cli.main import app
from trainyard.settings import Settings


@pytest.fixture(scope="module")
def home(tmp_path_factory, client_for, wait_job):
    tmp = tmp_path_factory.mktemp("mismatch")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"])
    images, labels = make_shapes_dataset(settings.data_roots[0] / "boxes", n_images=8, size=(48, 48), fmt="kitti")
    folder = make_image_folder(settings.data_roots[0] / "classes", {"a": 4, "b": 4})
    with client_for(settings) as client:
        made = {}
        for name, body in (("boxes", {"task": "detection", "train_folder": str(images), "train_labels": str(labels),
                                      "width": 32, "height": 32, "val_percent": 25}),
                           ("classes", {"train_folder": str(folder), "width": 16, "height": 16, "val_percent": 25})):
            response = client.post("/api/datasets", json={"name": name, **body})
            assert response.status_code == 201, response.text
            job = wait_job(client, response.json()["id"])
            assert job["status"] == "done", job["error"]
            made[name] = job["id"]
        yield SimpleNamespace(client=client, settings=settings, **made)


def _train(home, dataset: str, network: str):
    return home.client.post("/api/models", json={"name": "m", "datasets": [dataset], "networks": [network]})


def test_the_api_names_the_datasets_task_and_what_to_pick(home):
    for check in ("/api/models/check", "/api/models"):
        response = home.client.post(check, json={"name": "m", "datasets": [home.boxes], "networks": ["lenet"]})
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert detail.startswith(f"dataset 'boxes' ({home.boxes}) is a detection dataset and lenet is a "
                                 "classification network: pick a detection network (")
        assert "ssdlite320_mobilenet_v3_large" in detail and "\n" not in detail
    response = _train(home, home.classes, "ssdlite320_mobilenet_v3_large")
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail.startswith(f"dataset 'classes' ({home.classes}) is a classification dataset and "
                             "ssdlite320_mobilenet_v3_large is a detection network: pick a classification network (")
    assert "lenet" in detail and "--task detection" in detail
    assert home.client.get("/api/models").json()["models"] == []  # nothing was queued


def test_a_timm_classifier_on_a_detection_dataset_is_refused_the_same_way(home):
    response = _train(home, home.boxes, "timm:resnet10t")
    assert response.status_code == 422
    assert "is a detection dataset and timm:resnet10t is a classification network" in response.json()["detail"]
    response = _train(home, home.classes, "fcos:timm:resnet10t")  # a detector on a timm backbone: the reverse
    assert response.status_code == 422
    assert "is a classification dataset and fcos:timm:resnet10t is a detection network" in response.json()["detail"]


def test_the_cli_says_it_in_one_line_and_exits_2(home):
    env = {"TRAINYARD_HOME": str(home.settings.home), "TRAINYARD_AUTH_TOKEN": "",
           "TRAINYARD_DATA_ROOTS": str(home.settings.data_roots[0])}
    result = CliRunner().invoke(app, ["train", "--dataset", home.boxes, "--network", "lenet"], env=env)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "is a detection dataset and lenet is a classification network" in lines[0]
