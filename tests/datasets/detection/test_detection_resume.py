"""A detection build killed with SIGKILL mid-way resumes from its checkpoint (boxes included) to
the bytes an uninterrupted build makes: the job process run again, and ``trainyard dataset
resume ID`` after a killed ``dataset create``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.datasets.dataset_helpers import files_of as files
from tests.datasets.dataset_helpers import run_build as build
from tests.detection_data import make_shapes_dataset
from trainyard.cli.main import app
from trainyard.core.paths import JobFolder
from trainyard.datasets.build_stream import CHECKPOINT_EVERY, KILL_AT_ENV
from trainyard.datasets.leftovers import remove_build_leftovers

IMAGES = CHECKPOINT_EVERY + 200  # a checkpoint by count is always behind the kill
KILL_AT = CHECKPOINT_EVERY + 100


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> tuple[Path, Path]:
    """Small KITTI-labelled shapes, one damaged image late in the plan (skipped by the decode)."""
    images, labels = make_shapes_dataset(tmp_path_factory.mktemp("resume") / "data", n_images=IMAGES,
                                         size=(20, 16), fmt="kitti")
    (images / "img_9999.png").write_bytes(b"\x89PNG not really")
    (labels / "img_9999.txt").write_text("square 0 0 0 2 2 8 8\n")
    return images, labels


def spec(job: Path, images: Path, labels: Path, encoding: str) -> Path:
    job.mkdir(parents=True)
    (job / "spec.json").write_text(json.dumps({
        "name": "r", "task": "detection", "train_folder": str(images), "train_labels": str(labels),
        "width": 16, "height": 16, "encoding": encoding, "val_percent": 20, "test_percent": 10}))
    return job


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["none", "png"])
def test_a_killed_detection_build_resumes_to_the_same_bytes(tmp_path, shapes, encoding):
    whole = spec(tmp_path / "whole", *shapes, encoding)
    assert build(whole) == 0
    killed = spec(tmp_path / "killed", *shapes, encoding)
    assert build(killed, kill_at=KILL_AT) == -9
    checkpoint = json.loads((killed / "dataset.tmp" / "resume.json").read_text())
    assert 0 < checkpoint["position"] < KILL_AT
    remove_build_leftovers(killed)  # what the manager does when it finds the dead job
    assert (killed / "dataset.tmp" / "resume.json").is_file()  # kept: it is resumable
    assert build(killed) == 0
    expected, got = files(whole / "dataset"), files(killed / "dataset")
    assert sorted(got) == sorted(expected)
    assert {"train/boxes.npy", "val/geometry.npy", "test/box_offsets.npy"} <= set(got)
    for name in expected:
        assert got[name] == expected[name], name
    info = json.loads(got["info.json"])
    assert [Path(s["path"]).name for s in info["skipped"]] == ["img_9999.png"]
    assert not any("part" in n or "mean-sum" in n or "resume" in n for n in got)


@pytest.mark.slow
def test_the_cli_resumes_a_killed_detection_create(tmp_path, shapes, monkeypatch):
    images, labels = shapes
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(images.parent),
           "TRAINYARD_AUTH_TOKEN": ""}
    monkeypatch.setenv(KILL_AT_ENV, str(KILL_AT))  # the job process inherits it
    runner = CliRunner()
    create = ["dataset", "create", "--name", "r", "--task", "detection", "--train-folder", str(images),
              "--train-labels", str(labels), "--size", "16x16", "--json"]
    first = runner.invoke(app, create, env=env)
    assert first.exit_code == 1, first.output
    job = json.loads(first.stdout)
    monkeypatch.delenv(KILL_AT_ENV)
    again = runner.invoke(app, ["dataset", "resume", job["id"], "--json"], env=env)
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)
    assert resumed["status"] == "done" and resumed["task"] == "detection"
    whole = runner.invoke(app, create, env=env)
    assert whole.exit_code == 0, whole.output
    jobs = tmp_path / "home" / "jobs"
    got = files(JobFolder(jobs / job["id"]).dataset)
    fresh = files(JobFolder(jobs / json.loads(whole.stdout)["id"]).dataset)
    assert got.keys() == fresh.keys()
    assert all(got[k] == fresh[k] for k in fresh if k != "info.json")
    assert resumed["box_counts"] == json.loads(whole.stdout)["box_counts"]
