"""A cluster job's fence (core/fence.py) lives where its ranks cannot write: in the server's part
of the job folder, bound read-only into a confined rank. The rank still reads it and sees the
server's end; it can neither rewrite, delete nor move it, in a split job folder (namespaces, or
Landlock alone) or in one made before the split (whose work folder is the job folder). A fence
written where it used to be (``work/fence.json``) is still read, and a link planted where the
fence's folder goes is never followed."""

from __future__ import annotations

import json

import pytest
from bench.security.adversary_isolation import fence_rewrite

from trainyard.core import fence, jobfiles
from trainyard.core.paths import JobFolder
from trainyard.sandbox import namespaces
from trainyard.sandbox import policy as sandbox


def test_a_fence_written_in_the_work_folder_before_the_move_is_still_read(tmp_path):
    folder = JobFolder(tmp_path / "jobs" / "ab12cd").create()
    (folder.work / fence.FILE).write_text(json.dumps({"launch": "aaaa", "attempt": 0}))
    rank = fence.Watch.for_rank(folder.work, "aaaa/0")
    assert fence.read(folder.path) == fence.State("aaaa", 0) and rank.reason() is None

    assert fence.end(folder.path, "interrupted: ty-w1 stopped answering", by="server")
    assert rank.reason() == "interrupted: ty-w1 stopped answering"
    assert json.loads((folder.fence / fence.FILE).read_text())["by"] == "server"  # written in its folder
    (folder.work / fence.FILE).write_text(json.dumps({"launch": "aaaa", "attempt": 0}))  # the job's answer
    assert fence.Watch.for_rank(folder.path, "aaaa/0").reason() == "interrupted: ty-w1 stopped answering"


def test_a_link_planted_as_the_fences_folder_of_a_job_made_before_the_split_is_not_followed(tmp_path):
    job, elsewhere = tmp_path / "jobs" / "ab12cd", tmp_path / "elsewhere"
    job.mkdir(parents=True)
    elsewhere.mkdir()
    (job / "fence").symlink_to(elsewhere)  # its work folder is its job folder: it could plant this
    with pytest.raises(jobfiles.UnsafeFile):
        fence.begin(job, "aaaa")
    assert list(elsewhere.iterdir()) == []


needs_namespaces = pytest.mark.skipif(not namespaces.available(),
                                      reason=f"no namespaces here: {namespaces.unavailable_reason()}")


@needs_namespaces
@pytest.mark.parametrize("split", [True, False], ids=["split", "made-before-the-split"])
def test_a_confined_rank_cannot_take_its_fence_out_of_the_way(tmp_path, split):
    name, result, detail = fence_rewrite(tmp_path, split)
    assert result == "blocked", detail
    assert "rewrite refused, delete refused, rename refused" in detail and "saw its end" in detail


@pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock")
def test_with_landlock_alone_a_confined_rank_cannot_take_its_fence_out_of_the_way(tmp_path, monkeypatch):
    monkeypatch.setenv(namespaces.SETTING, "0")
    name, result, detail = fence_rewrite(tmp_path)
    assert result == "blocked", detail
    assert "rewrite refused, delete refused, rename refused" in detail and "saw its end" in detail
