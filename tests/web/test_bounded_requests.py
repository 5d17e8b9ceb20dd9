"""Requests are bounded before the expensive step: values that would fail only at run time
(or exhaust the machine) are refused with a 422, and classify holds one full-size image at a time."""

from __future__ import annotations

import io
import os
import weakref

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from trainyard.inference import responses as inference_responses
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app


@pytest.fixture
def api(settings, image_folder):
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        dataset = client.post("/api/datasets", json={"name": "d", "train_folder": str(image_folder)})
        assert dataset.status_code == 201, dataset.text
        yield client, dataset.json()["id"]


def _train(client, dataset_id: str, **fields):
    body = {"name": "m", "datasets": [dataset_id], "networks": ["lenet"], **fields}
    return client.post("/api/models", json=body)


@pytest.mark.parametrize("settings_", [
    {"processes": 100_000}, {"epochs": 1e308}, {"seed": 10**23}, {"seed": 1e23},
])
def test_values_that_fail_only_at_run_time_are_refused_with_a_422(api, settings_):
    client, dataset_id = api
    response = _train(client, dataset_id, settings=settings_)
    assert response.status_code == 422, response.text
    assert client.get("/api/models").json()["models"] == []  # nothing was queued


@pytest.mark.parametrize("settings_", ['{"epochs": Infinity}', '{"lr": {"base_lr": 1e400}}', '{"momentum": NaN}'])
def test_infinity_or_nan_in_json_is_refused(api, settings_):
    client, dataset_id = api
    body = f'{{"name": "m", "datasets": ["{dataset_id}"], "networks": ["lenet"], "settings": {settings_}}}'
    response = client.post("/api/models", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text


def test_processes_up_to_the_cpu_count_are_accepted(api):
    client, dataset_id = api
    response = _train(client, dataset_id, settings={"processes": os.cpu_count() or 1, "epochs": 1})
    assert response.status_code == 201, response.text


def test_a_name_longer_than_its_column_is_refused(api, image_folder):
    client, dataset_id = api
    assert _train(client, dataset_id, name="x" * 10_000).status_code == 422
    long_dataset = client.post("/api/datasets", json={"name": "x" * 10_000, "train_folder": str(image_folder)})
    assert long_dataset.status_code == 422


def test_a_negative_or_huge_dataset_seed_is_refused(api, image_folder):
    client, _ = api
    for seed in (-1, 10**23):
        response = client.post("/api/datasets", json={"name": "d", "train_folder": str(image_folder), "seed": seed})
        assert response.status_code == 422, response.text


def _big_png(side: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (side, side), (200, 40, 40)).save(buf, "PNG")
    return buf.getvalue()


def test_classify_holds_one_full_size_image_at_a_time(trained, monkeypatch):
    """64 uploads of a 2,000-pixel PNG: each is shrunk to the model's size as it is decoded."""
    alive: list[weakref.ref] = []
    most = [0]
    real_decode = inference_responses.decode

    def counting_decode(data, loaded):
        image = real_decode(data, loaded)
        alive.append(weakref.ref(image))
        most[0] = max(most[0], sum(ref() is not None for ref in alive))
        return image

    monkeypatch.setattr(inference_responses, "decode", counting_decode)
    app = create_app(trained.settings, run_scheduler=False)
    png = _big_png(2000)
    files = [("images", (f"{i}.png", png, "image/png")) for i in range(64)]
    with TestClient(app) as client:
        response = client.post(f"/api/models/{trained.model_id}/classify", files=files)
    assert response.status_code == 200, response.text
    assert len(response.json()["results"]) == 64
    assert most[0] == 1
