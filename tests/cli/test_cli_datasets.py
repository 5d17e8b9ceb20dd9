"""``trainyard dataset ...`` and ``trainyard jobs ...`` on generated folders with bad files.

The CLI reads its settings from TRAINYARD_* variables; every command here runs with a home and a
data root inside the test's temporary folder. Building runs in the foreground, as a user's would.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.paths import JobFolder


@pytest.fixture(scope="module")
def home(tmp_path_factory, make_images_with_bad_files, make_images) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("cli")
    data = tmp / "data"
    env = {"TRAINYARD_HOME": str(tmp / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    return SimpleNamespace(
        tmp=tmp, env=env, jobs=tmp / "home" / "jobs",
        folder=make_images_with_bad_files(data / "images"),
        more=make_images(data / "more", {"cat": 3, "dog": 3}, seed=1),
    )


def run(home, *args: str):
    return CliRunner().invoke(app, list(args), env=home.env)


def run_json(home, *args: str, code: int = 0):
    result = run(home, *args, "--json")
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def created(home) -> dict:
    """``trainyard dataset create --json`` on a folder with a corrupt and a non-image file."""
    result = run(home, "dataset", "create", "--name", "pets", "--train-folder", str(home.folder),
                 "--size", "32x24", "--json")
    assert result.exit_code == 0, result.output
    return {"stdout": result.stdout, "stderr": result.stderr}


def test_create_prints_one_json_document_with_counts_and_skipped(created, home):
    doc = json.loads(created["stdout"])  # the whole of stdout is one document
    assert doc["status"] == "done" and doc["kind"] == "dataset" and doc["error"] is None
    assert doc["classes"] == ["cat", "dog"]
    assert sum(sum(c.values()) for c in doc["counts"].values()) == 20
    assert doc["image_size"] == [32, 24]
    assert sorted(Path(s["path"]).name for s in doc["skipped"]) == ["broken.jpg", "notes.png"]
    assert (JobFolder(home.jobs / doc["id"]).dataset / "info.json").is_file()
    assert "done" in created["stderr"]  # people get their messages on stderr


def test_dataset_list_and_show(created, home):
    doc = json.loads(created["stdout"])
    listed = run_json(home, "dataset", "list")["datasets"]
    assert [(d["id"], d["status"]) for d in listed if d["id"] == doc["id"]] == [(doc["id"], "done")]
    shown = run_json(home, "dataset", "show", doc["id"])
    assert shown["counts"] == doc["counts"] and shown["skipped"] == doc["skipped"]

    text = run(home, "dataset", "show", doc["id"])
    assert text.exit_code == 0
    assert "classes: cat, dog" in text.stdout
    assert "broken.jpg" in text.stdout
    # Issue 22: each split on its own line, in training order, and the files that are not images
    splits = [line.split(":")[0] for line in text.stdout.splitlines() if line.endswith("classes")]
    assert splits == [s for s in ("train", "val", "test") if s in doc["counts"]] and len(splits) >= 2
    assert doc["not_images"] == 1 and doc["ignored"] == [str(Path(doc["ignored"][0]))]
    # Issue 31.9: the unreadable files are what "skipped" lists; the ignored README is named apart.
    assert "2 files skipped:" in text.stdout and "not images" not in text.stdout
    assert "1 file ignored, not image files:" in text.stdout and text.stdout.rstrip().endswith("README.txt")
    said = run(home, "dataset", "create", "--name", "pets again", "--train-folder", str(home.folder),
               "--size", "32x24").stderr
    assert "2 files skipped: broken.jpg, notes.png" in said and "1 file ignored, not image files: README.txt" in said


def test_jobs_list_and_show(created, home):
    doc = json.loads(created["stdout"])
    jobs = {j["id"]: j for j in run_json(home, "jobs", "list")["jobs"]}
    assert jobs[doc["id"]]["kind"] == "dataset" and jobs[doc["id"]]["status"] == "done"
    assert run_json(home, "jobs", "list", "--kind", "model")["jobs"] == []
    assert run_json(home, "jobs", "show", doc["id"])["classes"] == ["cat", "dog"]


def test_append_makes_a_new_version(created, home):
    parent = json.loads(created["stdout"])
    before = (JobFolder(home.jobs / parent["id"]).dataset / "info.json").read_bytes()
    doc = run_json(home, "dataset", "append", parent["id"], "--train-folder", str(home.more))
    assert doc["status"] == "done"
    assert doc["parent"] == parent["id"] and doc["id"] != parent["id"]
    assert sum(sum(c.values()) for c in doc["counts"].values()) == 20 + 6
    assert doc["image_size"] == [32, 24]
    assert (JobFolder(home.jobs / parent["id"]).dataset / "info.json").read_bytes() == before


def test_one_class_fails_with_exit_1_and_jobs_delete_removes_it(home, make_images):
    lonely = make_images(home.folder.parent / "lonely", {"cat": 5})
    doc = run_json(home, "dataset", "create", "--name", "lonely", "--train-folder", str(lonely),
                   "--size", "16x16", code=1)
    assert doc["status"] == "failed"
    assert "two classes" in doc["error"]
    assert not (JobFolder(home.jobs / doc["id"]).dataset).exists()

    deleted = run(home, "jobs", "delete", doc["id"])
    assert deleted.exit_code == 0, deleted.output
    assert not (home.jobs / doc["id"]).exists()
    assert doc["id"] not in [j["id"] for j in run_json(home, "jobs", "list")["jobs"]]
    again = run(home, "jobs", "delete", doc["id"])
    assert again.exit_code == 2 and "no job" in again.stderr


@pytest.mark.parametrize("size", ["32", "32x", "axb", "0x32", "32x5000"])
def test_bad_size_is_a_usage_error(home, size):
    result = run(home, "dataset", "create", "--name", "x", "--train-folder", str(home.folder), "--size", size)
    assert result.exit_code == 2
    assert "size" in result.stderr or "width" in result.stderr or "height" in result.stderr
    assert result.stdout == ""


def test_path_outside_the_data_roots_is_a_usage_error(home, make_images):
    outside = make_images(home.tmp / "elsewhere", {"cat": 2, "dog": 2})
    before = sorted(p.name for p in home.jobs.iterdir())
    result = run(home, "dataset", "create", "--name", "x", "--train-folder", str(outside), "--json")
    assert result.exit_code == 2
    assert "TRAINYARD_DATA_ROOTS" in result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in home.jobs.iterdir()) == before  # no job was made


def test_missing_folder_is_a_usage_error(home):
    result = run(home, "dataset", "create", "--name", "x", "--train-folder", str(home.folder / "nope"))
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


@pytest.mark.parametrize("args, words", [
    ([], ["exactly one training source"]),
    (["--resize", "stretch"], ["stretch", "squash"]),
    (["--val-percent", "120"], ["--val-percent:", "100"]),
    (["--channels", "17"], ["--channels:", "16"]),
    (["--depth", "12"], ["--depth:", "8", "16"]),
    (["--encoding", "gif"], ["--encoding:", "'png'"]),
])
def test_invalid_options_are_usage_errors(home, args, words):
    folder = [] if not args else ["--train-folder", str(home.folder)]
    result = run(home, "dataset", "create", "--name", "x", *folder, *args)
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    for word in words:
        assert word in message


def test_unknown_ids_are_reported(home):
    for args in (["dataset", "show", "nope"], ["jobs", "show", "nope"], ["dataset", "append", "nope",
                                                                            "--train-folder", str(home.more)]):
        result = run(home, *args)
        assert result.exit_code == 2, args
        assert "nope" in result.stderr


def test_dataset_commands_refuse_a_model_job(cli_env, ctx):
    model = ctx.manager.create("model", "a model", {"kind": "model"}, needs={"pool": "cpu"})
    for args in (["dataset", "show", model.id], ["dataset", "append", model.id, "--train-folder", "."]):
        result = CliRunner().invoke(app, args, env=cli_env)
        assert result.exit_code == 2, result.output
        assert "not a dataset" in " ".join(result.stderr.split())


def test_submit_queues_the_build_for_the_server(cli_env, settings, make_images):
    folder = make_images(settings.data_roots[0] / "images", {"cat": 2, "dog": 2})
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "later", "--train-folder", str(folder),
                                      "--size", "16x16", "--submit", "--json"], env=cli_env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "queued"
    assert "queued" in result.stderr
    assert not JobFolder(settings.jobs_dir / doc["id"]).dataset.exists()  # the server builds it, not the CLI
    listed = json.loads(CliRunner().invoke(app, ["jobs", "list", "--json"], env=cli_env).stdout)["jobs"]
    assert [(j["id"], j["status"]) for j in listed] == [(doc["id"], "queued")]
