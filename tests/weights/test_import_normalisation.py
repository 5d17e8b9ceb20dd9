"""Imported weights carry the input normalisation they were trained with: --mean/--std in the
store, the CLI and POST /api/weights; a trainyard checkpoint brings its own."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from tests.weights.fixtures import state_dict_bytes
from trainyard.cli.main import app
from trainyard.core.errors import InvalidInput
from trainyard.weights.store import WeightsStore


@pytest.fixture
def store(tmp_path):
    return WeightsStore(tmp_path / "weights")


@pytest.fixture
def weights(tmp_path):
    path = tmp_path / "lenet.pth"
    path.write_bytes(state_dict_bytes("lenet", 10, 28))
    return path


def test_mean_and_std_are_recorded_per_channel_or_for_all(store, weights):
    store.import_file("rgb", weights, "lenet", "0.485,0.456,0.406", "0.229,0.224,0.225")
    assert store.record("rgb")["mean"] == [0.485, 0.456, 0.406]
    assert store.record("rgb")["std"] == [0.229, 0.224, 0.225]
    store.import_file("one", weights, "lenet", "0.5", "0.25")
    assert (store.record("one")["mean"], store.record("one")["std"]) == ([0.5], [0.25])
    store.import_file("mixed", weights, "lenet", "0.4,0.5,0.6", "0.2")
    assert store.record("mixed")["std"] == [0.2, 0.2, 0.2]
    store.import_file("plain", weights, "lenet")
    assert store.record("plain")["mean"] is None  # unknown: a fine-tune recalibrates BatchNorm


@pytest.mark.parametrize("mean, std, message", [
    ("0.5", None, "both --mean and --std"),
    ("0.5,x", "0.2", "numbers separated by commas"),
    ("128", "0.2", "0..1 scale"),
    ("0.5", "0", "should be positive"),
    ("0.1,0.2", "0.1,0.2,0.3", "one per channel for both"),
    ("nan", "0.2", "one value, or one per channel"),
])
def test_bad_normalisation_is_refused_and_nothing_stored(store, weights, mean, std, message):
    with pytest.raises(InvalidInput, match=message):
        store.import_file("mine", weights, "lenet", mean, std)
    assert store.record("mine") is None


def test_published_entries_keep_their_own(store, weights):
    with pytest.raises(InvalidInput, match="published entry: its normalisation is the library's"):
        store.import_file("resnet18.imagenet1k_v1", weights, None, "0.5", "0.5")


def test_a_checkpoint_trained_on_its_dataset_mean_brings_it(store, tmp_path):
    """A job's checkpoint subtracted its dataset's mean image and divided by nothing."""
    mean = torch.full((28, 28, 1), 51.0)  # 0.2 on the 0..1 scale
    path = tmp_path / "epoch-3.pt"
    model = torch.load(_file(tmp_path, state_dict_bytes("lenet", 10, 28)), weights_only=True)
    torch.save({"model": model, "preprocess": {"mean": mean, "mean_mode": "image", "channels": 1}}, path)
    store.import_file("job-ckpt", path, "lenet")
    assert store.record("job-ckpt")["mean"] == pytest.approx([0.2]) and store.record("job-ckpt")["std"] == [1.0]
    torch.save({"model": model, "preprocess": {"mean": None, "mean_mode": "none", "channels": 1}}, path)
    store.import_file("raw-ckpt", path, "lenet")
    assert (store.record("raw-ckpt")["mean"], store.record("raw-ckpt")["std"]) == ([0.0], [1.0])
    store.import_file("typed", path, "lenet", "0.3", "0.3")  # what the user says wins
    assert store.record("typed")["mean"] == [0.3]


def _file(tmp_path, body: bytes):
    path = tmp_path / "raw.pth"
    path.write_bytes(body)
    return path


def test_cli_import_with_mean_and_std(cli_env, weights):
    runner = CliRunner()
    made = runner.invoke(app, ["weights", "import", "digits", str(weights), "--network", "lenet",
                               "--mean", "0.5", "--std", "0.25", "--json"], env=cli_env)
    assert made.exit_code == 0, made.output
    assert (json.loads(made.stdout)["mean"], json.loads(made.stdout)["std"]) == ([0.5], [0.25])
    bad = runner.invoke(app, ["weights", "import", "other", str(weights), "--network", "lenet",
                              "--mean", "0.5"], env=cli_env)
    assert bad.exit_code == 2 and "both --mean and --std" in bad.output


def test_api_import_form_fields(settings, client_for, weights):
    with client_for(settings, run_scheduler=False) as api:
        made = api.post("/api/weights", data={"name": "digits", "network": "lenet", "mean": "0.5,0.5,0.5",
                                              "std": "0.25"}, files={"file": ("w.pth", weights.read_bytes())})
        assert made.status_code == 201, made.text
        assert made.json()["mean"] == [0.5, 0.5, 0.5] and made.json()["std"] == [0.25, 0.25, 0.25]
        bad = api.post("/api/weights", data={"name": "other", "network": "lenet", "mean": "-1", "std": "1"},
                       files={"file": ("w.pth", weights.read_bytes())})
        assert bad.status_code == 422 and "0..1 scale" in bad.json()["detail"]
        assert 'name="mean"' in api.get("/weights").text and 'name="std"' in api.get("/weights").text
