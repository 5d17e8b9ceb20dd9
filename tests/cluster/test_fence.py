"""The fence (core/fence.py, training/fence.py): a rank whose job ended elsewhere stops by itself
within seconds, writes nothing more into the job, and says so in one line of its own output.

No Ray here: the rank is the training entry point as the launcher starts it (with
TRAINYARD_FENCE), and the job's end is written as a server writes it. The same on a cluster of
namespace hosts with a host cut off: tests/cluster/test_fence_hosts.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset, model_spec, write_job
from trainyard.core import fence
from trainyard.core.status import Status


def test_a_launch_stands_until_a_newer_one_or_an_end_and_the_first_reason_stays(tmp_path):
    assert not fence.end(tmp_path, "no fence: a local job", by="server")
    fence.begin(tmp_path, "aaaa")
    launcher = fence.Watch(tmp_path, "aaaa", ended_by=("server",))
    rank = fence.Watch.for_rank(tmp_path, "aaaa/0")
    assert fence.begin_attempt(tmp_path, "aaaa", 0)
    assert launcher.reason() is None and rank.reason() is None
    assert fence.end(tmp_path, "training process rank 1 on node ty-w2 (1234abcd) was lost", by="launcher")
    assert fence.end(tmp_path, "interrupted: ty-w1 stopped answering", by="server")
    assert rank.reason() == "training process rank 1 on node ty-w2 (1234abcd) was lost"
    assert launcher.reason() is None  # its own end: it goes on to report it

    fence.begin(tmp_path, "bbbb")  # a resume's launcher
    assert fence.Watch(tmp_path, "aaaa", ended_by=("server",)).reason() == "a newer launch of the job replaced this one"
    assert rank.reason() is not None  # fenced stays fenced
    assert fence.Watch.for_rank(tmp_path, "bbbb/0").reason() == "a newer launch of the job replaced this one"


def test_a_launcher_that_was_replaced_never_takes_or_ends_the_fence_of_the_launch_after_it(tmp_path):
    """A launcher cut off with its host comes back after a resume started the next launch: it
    neither ends that launch's attempt nor starts ranks of its own under the fence."""
    fence.begin(tmp_path, "aaaa")
    assert fence.begin_attempt(tmp_path, "aaaa", 0)
    fence.begin(tmp_path, "bbbb")  # the resume's launcher
    assert fence.begin_attempt(tmp_path, "bbbb", 0)
    resumed = fence.Watch.for_rank(tmp_path, "bbbb/0")
    assert not fence.end(tmp_path, "its launcher ended the attempt", by="launcher", launch="aaaa")
    assert not fence.begin_attempt(tmp_path, "aaaa", 1)
    fence.request_resize(tmp_path, "aaaa", 2)
    assert resumed.reason() is None and resumed.resize is None  # the resumed ranks train on
    assert fence.end(tmp_path, "interrupted: ty-w1 stopped answering", by="server")
    assert not fence.begin_attempt(tmp_path, "bbbb", 1)  # a server ended it: no attempt after that
    assert resumed.reason() == "interrupted: ty-w1 stopped answering"


def test_a_server_acting_on_a_stale_read_of_a_job_ends_nothing_of_the_launch_that_resumed_it(ctx, tmp_path):
    """A server cut off mid-tick comes back with the job as it read it (running, its own) after
    another server ended it and a resume launched it again: its end of that read is refused, and
    the resumed ranks train on (it used to end their fence first, and they stopped)."""
    dataset = make_dataset(tmp_path / "ds", train=8, val=4, size=8)
    job = ctx.manager.create("model", "cut", model_spec(dataset).model_dump(mode="json"),
                             needs={"pool": "cluster", "device": "cpu", "count": 1})
    ctx.store.update_job(job.id, status="running", owner_host="ty-w1", owner_pid=4321)
    stale = ctx.store.get_job(job.id)  # what the cut-off server read before the cut
    work = ctx.manager.folder(job.id).work
    fence.begin(work, "aaaa")
    assert fence.begin_attempt(work, "aaaa", 0)
    assert ctx.manager.finish(stale, Status.FAILED, "interrupted: ty-w1 stopped answering")  # the other server
    assert fence.Watch.for_rank(work, "aaaa/0").reason() == "interrupted: ty-w1 stopped answering"

    assert ctx.manager.resume(job.id).status == "queued"
    fence.begin(work, "bbbb")  # the resume's launcher, and its ranks
    assert fence.begin_attempt(work, "bbbb", 0)
    assert not ctx.manager.finish(stale, Status.FAILED, "lost the Ray cluster")  # the cut-off server, back
    assert fence.Watch.for_rank(work, "bbbb/0").reason() is None
    assert ctx.store.get_job(job.id).status == "queued"


def _events_after(job_dir, moment: float) -> list[dict]:
    lines = (job_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["time"] > moment]


@pytest.mark.slow
def test_a_rank_stops_within_seconds_of_its_jobs_end_and_writes_nothing_after(tmp_path):
    dataset = make_dataset(tmp_path / "ds", train=32, val=8, size=16)
    job = write_job(tmp_path / "jobs" / "ab12cd", model_spec(dataset, epochs=5000, snapshot_interval=2,
                                                             val_interval=2))
    fence.begin(job, "aaaa")
    fence.begin_attempt(job, "aaaa", 0)
    env = {**os.environ, fence.ENV: "aaaa/0", "OMP_NUM_THREADS": "1"}
    with open(tmp_path / "output-rank-0.txt", "wb") as out:
        rank = subprocess.Popen([sys.executable, "-m", "trainyard.training.run", str(job)], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        checkpoints = job / "checkpoints"
        assert wait_for(lambda: checkpoints.is_dir() and len(list(checkpoints.glob("*.pt"))) >= 2, 180)
        fence.end(job, "interrupted: ty-w1 stopped answering", by="server")
        ended = time.time()
        written = {p for p in checkpoints.iterdir() if p.suffix == ".pt"}
        assert wait_for(lambda: rank.poll() is not None, 60), "the rank trains on after its job ended"
    finally:
        rank.kill()
        rank.wait()
    assert rank.returncode == 143
    assert [p.name for p in checkpoints.iterdir() if p.suffix != ".pt"] == []  # no temp file left
    # A write whose last fence check came just before the end may still be renamed after it (a
    # file fence cannot be atomic with a rename): at most that one, its data written before the end.
    late = set(checkpoints.iterdir()) - written
    assert len(late) <= 1, f"checkpoints written after the job ended: {sorted(p.name for p in late)}"
    assert all(p.stat().st_mtime <= ended for p in late), "a checkpoint was written after the job ended"
    assert _events_after(job, ended) == []
    assert "aborted" not in (job / "log.txt").read_text()
    output = (tmp_path / "output-rank-0.txt").read_text()
    assert "stopped: job ab12cd ended (interrupted: ty-w1 stopped answering)" in output, output
