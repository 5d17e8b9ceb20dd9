"""A test split for detection datasets: a test folder with its labels, or ``--test-percent`` of
the training images (disjoint from val and train); and ``trainyard evaluate --split test`` on a
detector trained on such a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.detection_data import make_shapes_dataset, shapes_truth
from trainyard.cli.main import app
from trainyard.core.paths import JobFolder
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.datasets.spec import DatasetSpec

N, SIZE = 16, (64, 48)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("test-split")
    train = make_shapes_dataset(root / "data" / "train", n_images=N, size=SIZE, fmt="kitti")
    test = make_shapes_dataset(root / "data" / "test", n_images=6, size=SIZE, fmt="kitti", seed=3)
    env = {"TRAINYARD_HOME": str(root / "home"), "TRAINYARD_DATA_ROOTS": str(root / "data"),
           "TRAINYARD_AUTH_TOKEN": ""}
    return train, test, env


def _create(env, *args) -> dict:
    result = CliRunner().invoke(app, ["dataset", "create", "--task", "detection", "--size", "48x48", "--json",
                                      *args], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _hashes(doc: dict, env, split: str) -> set[bytes]:
    data = DetectionSplit(JobFolder(Path(env["TRAINYARD_HOME"]) / "jobs" / doc["id"]).dataset / split)
    return {data.images(np.array([i]))[0].tobytes() for i in range(len(data))}


def test_a_test_folder_with_its_labels_is_the_test_split(data):
    (images, labels), (test_images, test_labels), env = data
    doc = _create(env, "--name", "with-test", "--train-folder", str(images), "--train-labels", str(labels),
                  "--test-folder", str(test_images), "--test-labels", str(test_labels))
    assert doc["images"] == {"train": 12, "val": 4, "test": 6}
    truth = [s for image in shapes_truth(6, SIZE, seed=3) for s in image]
    assert sum(doc["box_counts"]["test"].values()) == len(truth)
    shown = CliRunner().invoke(app, ["dataset", "show", doc["id"]], env=env)
    assert shown.exit_code == 0 and "test" in shown.stdout


def test_test_percent_draws_a_disjoint_test_split(data):
    (images, labels), _, env = data
    doc = _create(env, "--name", "percent", "--train-folder", str(images), "--train-labels", str(labels),
                  "--val-percent", "25", "--test-percent", "25")
    assert doc["images"] == {"train": 8, "val": 4, "test": 4}
    train, val, test = (_hashes(doc, env, split) for split in ("train", "val", "test"))
    assert len(train | val | test) == N and not (train & test) and not (val & test)
    without = _create(env, "--name", "no-test", "--train-folder", str(images), "--train-labels", str(labels),
                      "--val-percent", "25")
    assert without["images"] == {"train": 12, "val": 4}
    assert _hashes(without, env, "val") == val  # a test split leaves the val draw as it was


def test_a_test_folder_needs_its_labels():
    with pytest.raises(ValueError, match="test_folder and test_labels together"):
        DatasetSpec.model_validate({"name": "d", "task": "detection", "train_folder": "a", "train_labels": "b",
                                    "test_folder": "c"})
    with pytest.raises(ValueError, match="under 100"):
        DatasetSpec.model_validate({"name": "d", "task": "detection", "train_folder": "a", "train_labels": "b",
                                    "val_percent": 50, "test_percent": 50})


@pytest.mark.slow
def test_evaluate_a_detector_on_the_test_split(data):
    (images, labels), (test_images, test_labels), env = data
    doc = _create(env, "--name", "for-eval", "--train-folder", str(images), "--train-labels", str(labels),
                  "--test-folder", str(test_images), "--test-labels", str(test_labels))
    runner = CliRunner()
    trained = runner.invoke(app, ["train", "--dataset", doc["id"], "--network", "ssdlite320_mobilenet_v3_large",
                                  "--epochs", "1", "--batch-size", "4", "--json"], env=env)
    assert trained.exit_code == 0, trained.output
    (model,) = json.loads(trained.stdout)["jobs"]
    done = runner.invoke(app, ["evaluate", model["id"], "--split", "test", "--json"], env=env)
    assert done.exit_code == 0, done.output
    evaluation = json.loads(done.stdout)
    assert evaluation["task"] == "detection" and evaluation["split"] == "test" and evaluation["images"] == 6
    assert 0 <= evaluation["map"] <= evaluation["map50"] <= 1
