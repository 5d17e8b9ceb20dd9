"""Adversarial input gets a 4xx (or a 503 with a message when the home is read-only), never a 500.

Each case comes from the issue-13 adversarial run; every one answered a bare 500 before.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app


def _client(settings) -> TestClient:
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    return TestClient(app, raise_server_exceptions=False)


def _one_line(response, status: int) -> str:
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail
    return detail


@pytest.fixture
def model_id(settings) -> str:
    """A model job with one real-looking checkpoint folder (no checkpoint for odd epochs)."""
    with _client(settings) as client:
        ctx = client.app.state.ctx
        job = ctx.manager.create("model", "m", {"name": "m"}, needs={"pool": "cpu"})
        ctx.manager.folder(job.id).checkpoints.mkdir(parents=True)
        return job.id


@pytest.mark.parametrize("epoch", ["nan", "inf", "-inf", "1e308", "-1"])
def test_a_nonsense_epoch_is_a_404_naming_the_epoch(settings, model_id, epoch):
    with _client(settings) as client:
        classify = client.post(f"/api/models/{model_id}/classify", params={"epoch": epoch},
                               json={"paths": ["nope.png"]})
        download = client.get(f"/api/models/{model_id}/download", params={"epoch": epoch})
    assert classify.status_code in (403, 404, 422), classify.text
    assert "epoch" in _one_line(download, 404)


def test_a_nul_byte_in_a_path_is_a_422(settings):
    root = settings.data_roots[0]
    with _client(settings) as client:
        dataset = client.post("/api/datasets", json={"name": "x", "train_folder": f"{root}/a\x00b"})
        preview = client.post("/api/datasets/preview", json={"path": f"{root}/a\x00.png"})
        pretrained = client.post("/api/models", json={"name": "m", "datasets": ["x"], "networks": ["lenet"],
                                                      "pretrained": "w\x00.pt"})
    assert "NUL" in _one_line(dataset, 422)
    assert preview.status_code < 500, preview.text
    assert pretrained.status_code < 500, pretrained.text


def test_deeply_nested_json_in_a_form_field_is_a_422(settings):
    with _client(settings) as client:
        response = client.post("/api/datasets/upload", data={"spec": "[" * 100_000},
                               files={"file": ("a.zip", b"PK\x05\x06" + bytes(18))})
    assert "nested too deeply" in _one_line(response, 422)


def test_nan_in_a_body_that_fails_validation_is_a_one_line_422(settings):
    body = '{"name": "", "datasets": ["d"], "networks": ["lenet"], "base_lrs": [NaN], "settings": {"epochs": NaN}}'
    with _client(settings) as client:
        response = client.post("/api/models", content=body, headers={"content-type": "application/json"})
        curve = client.post("/api/solvers/lr-curve", content='{"lr": {"base_lr": NaN}}',
                            headers={"content-type": "application/json"})
    _one_line(response, 422)
    assert curve.status_code == 422, curve.text


def test_a_5000_digit_last_event_id_replays_from_the_start(settings, model_id):
    with _client(settings) as client:
        client.app.state.ctx.manager.abort(model_id)  # ended: the stream ends after the replay
        response = client.get(f"/api/jobs/{model_id}/events", headers={"Last-Event-ID": "9" * 5000})
    assert response.status_code == 200
    assert "event: end" in response.text


def test_a_read_only_home_is_a_503_that_says_what_to_fix(settings, image_folder, monkeypatch):
    real_mkdir = Path.mkdir

    def read_only(self, *args, **kwargs):
        if self.is_relative_to(settings.jobs_dir):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    with _client(settings) as client:
        monkeypatch.setattr(Path, "mkdir", read_only)
        response = client.post("/api/datasets", json={"name": "x", "train_folder": str(image_folder)})
    assert "TRAINYARD_HOME" in _one_line(response, 503)


def test_a_read_only_database_is_a_503(settings, image_folder):
    with _client(settings):
        pass  # creates the database and its tables
    database = settings.home / "trainyard.db"
    read_only = settings.model_copy(update={"database_url": f"sqlite:///file:{database}?mode=ro&uri=true"})
    with _client(read_only) as client:
        response = client.post("/api/datasets", json={"name": "x", "train_folder": str(image_folder)})
    assert "readonly" in _one_line(response, 503)
    assert not any(settings.jobs_dir.iterdir())  # the refused job left no folder behind
