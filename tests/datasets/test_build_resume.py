"""A build killed with SIGKILL mid-way resumes from what it wrote, and the result is byte for
byte the dataset an uninterrupted build makes: directly (the job process run again), and
through the CLI (``trainyard dataset resume ID``) after ``dataset create`` was killed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dataset_helpers import files_of as files
from dataset_helpers import make_class_tree
from dataset_helpers import run_build as build
from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.paths import JobFolder
from trainyard.datasets.build_stream import CHECKPOINT_EVERY, KILL_AT_ENV
from trainyard.datasets.leftovers import remove_build_leftovers

IMAGES = CHECKPOINT_EVERY + 400  # a checkpoint by count is always behind the kill
KILL_AT = CHECKPOINT_EVERY + 250


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resume") / "images"
    # 40x24 sources into 16x16 "fill": every image has seeded noise bands, so a resumed build
    # that seeded them differently would show; one damaged file early, one late: both skipped.
    make_class_tree(root, {"a": IMAGES // 2, "b": IMAGES - IMAGES // 2}, size=(40, 24))
    (root / "a" / "a_0000_broken.png").write_bytes(b"\x89PNG not really")
    (root / "b" / "zz_broken.png").write_bytes(b"\x89PNG not really")
    return root


def spec(job: Path, images: Path, encoding: str) -> Path:
    job.mkdir(parents=True)
    (job / "spec.json").write_text(json.dumps({"name": "r", "width": 16, "height": 16, "resize": "fill",
                                               "encoding": encoding, "train_folder": str(images)}))
    return job


@pytest.mark.parametrize("encoding", ["none", "jpeg"])
def test_a_killed_build_resumes_to_the_same_bytes(tmp_path, images, encoding):
    whole = spec(tmp_path / "whole", images, encoding)
    assert build(whole) == 0
    killed = spec(tmp_path / "killed", images, encoding)
    assert build(killed, kill_at=KILL_AT) == -9
    checkpoint = json.loads((killed / "dataset.tmp" / "resume.json").read_text())
    assert 0 < checkpoint["position"] < KILL_AT  # written past it: the resume cuts that off
    remove_build_leftovers(killed)  # what the manager does when it finds the dead job
    assert (killed / "dataset.tmp" / "resume.json").is_file()  # kept: it is resumable
    assert build(killed) == 0
    expected, got = files(whole / "dataset"), files(killed / "dataset")
    assert sorted(got) == sorted(expected)
    assert "train/images.u8" in got or "train/images.bin" in got
    for name in expected:
        assert got[name] == expected[name], name
    info = json.loads(got["info.json"])
    assert sorted(Path(s["path"]).name for s in info["skipped"]) == ["a_0000_broken.png", "zz_broken.png"]
    assert not any("part" in n or "mean-sum" in n or "resume" in n for n in got)


def test_a_changed_plan_starts_afresh(tmp_path, images):
    job = spec(tmp_path / "job", images, "none")
    assert build(job, kill_at=KILL_AT) == -9
    stored = json.loads((job / "spec.json").read_text())
    (job / "spec.json").write_text(json.dumps({**stored, "seed": 7}))  # another split, other noise
    assert build(job) == 0
    fresh = spec(tmp_path / "fresh", images, "none")
    (fresh / "spec.json").write_text(json.dumps({**stored, "seed": 7}))
    assert build(fresh) == 0
    assert files(job / "dataset") == files(fresh / "dataset")


def test_the_cli_resumes_a_killed_create(tmp_path, images, monkeypatch):
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(images.parent),
           "TRAINYARD_AUTH_TOKEN": ""}
    monkeypatch.setenv(KILL_AT_ENV, str(KILL_AT))  # the job process inherits it
    runner = CliRunner()
    create = ["dataset", "create", "--name", "r", "--train-folder", str(images), "--size", "16x16",
              "--resize", "fill", "--json"]
    first = runner.invoke(app, create, env=env)
    assert first.exit_code == 1, first.output
    job = json.loads(first.stdout)
    assert job["status"] == "failed"
    monkeypatch.delenv(KILL_AT_ENV)
    again = runner.invoke(app, ["dataset", "resume", job["id"], "--json"], env=env)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["status"] == "done"
    whole = runner.invoke(app, create, env=env)
    assert whole.exit_code == 0, whole.output
    jobs = tmp_path / "home" / "jobs"
    resumed_dir, fresh_dir = (JobFolder(jobs / job["id"]).dataset,
                              JobFolder(jobs / json.loads(whole.stdout)["id"]).dataset)
    resumed, fresh = files(resumed_dir), files(fresh_dir)
    assert resumed.keys() == fresh.keys()
    assert all(resumed[k] == fresh[k] for k in fresh if k != "info.json")
    assert np.array_equal(np.load(resumed_dir / "mean.npy"), np.load(fresh_dir / "mean.npy"))
    done = runner.invoke(app, ["dataset", "resume", job["id"]], env=env)
    assert done.exit_code == 2 and "unfinished dataset build" in done.output
