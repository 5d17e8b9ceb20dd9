"""Rank 0 of an elastic cluster job that loses a peer leaves the job's status to its launcher,
which logs the shrink and goes on: rank 0's "status failed" stood in the events as the job's end
while it went on (issue 42). A job that is not elastic still says it failed."""

from __future__ import annotations

import json

import pytest

from trainyard.core.events import read_events
from trainyard.core.fence import ENV as FENCE_ENV
from trainyard.core.jobproc import EXIT_FAILED, run_job
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.training import run


def _rank0_loses_a_peer(tmp_path, monkeypatch, min_workers: int | None) -> JobFolder:
    monkeypatch.setenv(FENCE_ENV, "launch/0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    folder = JobFolder(tmp_path / "job").create()
    folder.spec.write_text(json.dumps({"kind": "model", "min_workers": min_workers}))
    events = run.RankEvents(folder.work, active=True)

    def body(stop):
        raise RuntimeError("[../gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:4242")

    code = run_job(events, body, describe=lambda e: run._describe_end(e, folder, events),
                   unreported=lambda message: run._report_rank_error(folder, 0, message))
    assert code == EXIT_FAILED
    return folder


def _statuses(folder: JobFolder) -> list[str]:
    return [e["status"] for e in read_events(folder.events, {"status"})]


def test_an_elastic_jobs_lost_peer_is_left_to_the_launcher(tmp_path, monkeypatch):
    folder = _rank0_loses_a_peer(tmp_path, monkeypatch, min_workers=1)
    assert Status.FAILED not in _statuses(folder)
    assert "another training process of this job stopped" in (folder.work / "rank-0.error").read_text()


@pytest.mark.parametrize("min_workers", [None, 0])
def test_a_job_that_is_not_elastic_still_fails_from_rank_0(tmp_path, monkeypatch, min_workers):
    folder = _rank0_loses_a_peer(tmp_path, monkeypatch, min_workers=min_workers)
    assert _statuses(folder)[-1] == Status.FAILED
