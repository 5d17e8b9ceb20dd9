"""User paths must stay inside the data roots, links included; the layout of a job folder."""

import os

import pytest

from trainyard.core.files import read_json, write_json_atomic
from trainyard.core.paths import (
    JobFolder,
    PathNotAllowed,
    checkpoint_job,
    checkpoint_name,
    checkpoint_owner,
    job_id_of,
    resolve_inside,
)


def test_path_inside_a_root_resolves(tmp_path):
    (tmp_path / "data" / "a").mkdir(parents=True)
    assert resolve_inside(tmp_path / "data" / "a", [tmp_path / "data"]) == (tmp_path / "data" / "a").resolve()


def test_path_outside_every_root_is_refused_with_a_hint(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(PathNotAllowed, match="TRAINYARD_DATA_ROOTS"):
        resolve_inside(tmp_path, [tmp_path / "data"])
    with pytest.raises(PathNotAllowed, match="outside"):
        resolve_inside(tmp_path / "data" / ".." / "elsewhere", [tmp_path / "data"], must_exist=False)


def test_link_that_leaves_the_root_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", tmp_path / "data" / "link")
    with pytest.raises(PathNotAllowed):
        resolve_inside(tmp_path / "data" / "link", [tmp_path / "data"])


def test_missing_path_is_named(tmp_path):
    with pytest.raises(PathNotAllowed, match="does not exist"):
        resolve_inside(tmp_path / "nope", [tmp_path])


def test_atomic_json_round_trip_leaves_no_temp_files(tmp_path):
    write_json_atomic(tmp_path / "x.json", {"a": 1})
    write_json_atomic(tmp_path / "x.json", {"a": 2})
    assert read_json(tmp_path / "x.json") == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_checkpoint_names_sort_by_epoch():
    assert checkpoint_name(3) == "epoch-0003.pt"
    assert checkpoint_name(2.5) == "epoch-0002.5.pt"
    assert checkpoint_name(0.25) == "epoch-0000.25.pt"
    assert sorted([checkpoint_name(e) for e in (10, 2, 1)]) == [checkpoint_name(e) for e in (1, 2, 10)]


def test_a_new_job_folder_is_split_and_an_old_one_is_its_own_work_folder(tmp_path):
    new = JobFolder(tmp_path / "jobs" / "new").create()
    assert new.split and new.work == new.path / "work"
    assert (new.spec.parent, new.output.parent, new.server_log.parent) == (new.path,) * 3
    assert (new.events.parent, new.log.parent, new.checkpoints.parent, new.dataset.parent) == (new.work,) * 4
    old = JobFolder(tmp_path / "jobs" / "old")
    old.path.mkdir()
    assert not old.split and old.work == old.path and old.events == old.path / "events.jsonl"
    (old.path / "work").symlink_to(tmp_path, target_is_directory=True)  # planted by the old job
    assert not old.split and old.work == old.path
    for folder in (new, old):
        checkpoint = folder.checkpoints / "epoch-0001.pt"
        assert checkpoint_job(checkpoint, tmp_path / "jobs") == folder.path.name
        assert checkpoint_owner(checkpoint) == folder.path and job_id_of(folder.work) == folder.path.name
    assert checkpoint_job(tmp_path / "elsewhere" / "checkpoints" / "epoch-0001.pt", tmp_path / "jobs") is None
