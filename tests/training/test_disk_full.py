"""A training job on a full disk ends `failed` with "no space left on device", in one line."""

from __future__ import annotations

import pytest
from model_helpers import make_dataset, model_spec, statuses, write_job

from trainyard.artifact import checkpoint as checkpoint_module
from trainyard.training import disk_full
from trainyard.training.run import main


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=32, val=8, size=16)


def onto_a_full_disk(path, write, before_rename=None):
    """write_atomic, but the bytes go to /dev/full: every write fails with ENOSPC, as on a full disk."""
    with open("/dev/full", "wb") as f:
        write(f)
        f.flush()


def torch_short_write(path, write, before_rename=None):
    """What torch's archive writer raises when it notices the short write before Python does."""
    raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")


@pytest.mark.parametrize("writer", [onto_a_full_disk, torch_short_write])
def test_a_full_disk_fails_the_job_saying_so(dataset, tmp_path, monkeypatch, writer):
    monkeypatch.setattr(checkpoint_module, "write_atomic", writer)
    monkeypatch.setattr(disk_full, "_free_bytes", lambda folder: 4096)  # what a full disk leaves
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1))
    assert main(job) == 1
    last = statuses(job)[-1]
    assert last["status"] == "failed"
    assert last["error"].startswith("no space left on device: ") and "\n" not in last["error"]
    assert "unexpected pos" not in last["error"] and "resume the job" in last["error"]


def test_a_torch_write_failure_with_room_left_is_not_called_a_full_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_full, "_free_bytes", lambda folder: 10 << 30)
    error = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")
    assert disk_full.disk_full_message(error, tmp_path) is None
