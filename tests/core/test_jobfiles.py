"""core/jobfiles.py: the server's only way into a job folder refuses links on every component,
FIFOs and other non-files, never blocks, and reads at most its bound; the O_NOFOLLOW walk (for
kernels without openat2) refuses the same."""

from __future__ import annotations

import os

import pytest

from trainyard.core import jobfiles


@pytest.fixture(params=["openat2", "walk"])
def way(request, monkeypatch):
    """Each test runs with openat2 and with the O_NOFOLLOW walk."""
    if request.param == "walk":
        monkeypatch.setattr(jobfiles, "_have_openat2", False)
    return request.param


@pytest.fixture
def job(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:the-hash\n")
    folder = tmp_path / "job"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "events.jsonl").write_text('{"type": "log"}\n')
    (folder / "log.txt").symlink_to(secret)
    (folder / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(folder / "spec.json")
    return folder


def test_a_regular_file_reads_within_its_bound(job, way):
    assert jobfiles.read_bytes(job, "events.jsonl", 1 << 20) == b'{"type": "log"}\n'
    assert jobfiles.read_bytes(job, "events.jsonl", 5) == b'{"typ'
    assert jobfiles.read_bytes(job, "events.jsonl", 4, tail=True) == b"g\"}\n"
    assert jobfiles.tail_text(job, "events.jsonl", 3) == '"}\n'
    with pytest.raises(ValueError, match="larger than"):
        jobfiles.read_json(job, "events.jsonl", max_bytes=4)


def test_links_are_refused_on_the_last_and_on_any_earlier_component(job, way):
    with pytest.raises(jobfiles.UnsafeFile):
        jobfiles.read_bytes(job, "log.txt", 100)
    with pytest.raises(jobfiles.UnsafeFile):
        jobfiles.read_bytes(job, "elsewhere/secret.txt", 100)
    assert "root" not in jobfiles.tail_text(job, "log.txt", 100)
    with pytest.raises(jobfiles.UnsafeFile):
        jobfiles.open_append(job, "log.txt")  # nor written through
    assert (job.parent / "secret.txt").read_text() == "root:the-hash\n"


def test_a_fifo_is_refused_at_once_not_waited_on(job, way):
    with pytest.raises(jobfiles.UnsafeFile, match="not a regular file"):
        jobfiles.read_json(job, "spec.json")
    with pytest.raises(jobfiles.UnsafeFile):
        jobfiles.open_append(job, "spec.json")


def test_append_creates_a_missing_file_and_listing_skips_links(job, way):
    fd = jobfiles.open_append(job, "output.txt")
    os.write(fd, b"started\n")
    os.close(fd)
    assert (job / "output.txt").read_bytes() == b"started\n"
    (job / "checkpoints" / "epoch-0001.pt").write_bytes(b"x")
    (job / "checkpoints" / "epoch-0002.pt").symlink_to(job.parent / "secret.txt")
    assert jobfiles.regular_names(job, "checkpoints") == ["epoch-0001.pt"]
    assert jobfiles.regular_names(job, "elsewhere") == []  # a linked folder is not listed


def test_a_folder_that_is_a_link_is_refused_and_a_hard_link_is_not_written(job, tmp_path, way):
    # a job made before the split may have replaced its ``work`` folder by a link elsewhere
    with pytest.raises(jobfiles.UnsafeFile, match="is a link"):
        jobfiles.read_bytes(job / "elsewhere", "secret.txt", 100)
    assert jobfiles.regular_names(job / "elsewhere", ".") == []
    os.link(tmp_path / "secret.txt", job / "rank-1.error")  # another name of a file outside
    with pytest.raises(jobfiles.UnsafeFile, match="hard link"):
        jobfiles.open_append(job, "rank-1.error")
    assert (tmp_path / "secret.txt").read_text() == "root:the-hash\n"
