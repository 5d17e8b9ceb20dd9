"""A foreground `trainyard train` queued behind another training says which job it waits for
and what to do, instead of a bar at 0 % with a ticking clock that looked like a hang (issue 31)."""

from __future__ import annotations

import os
import signal
import time

import pytest
import typer

from trainyard.cli.output import run_in_foreground
from trainyard.core.status import Status
from trainyard.jobs.scheduling.leases import this_process


def _holder(ctx):
    """A training that holds the one CPU slot, run by this (live) process."""
    job = ctx.manager.create("model", "first run", {"name": "first run"}, needs={"pool": "cpu"}, foreground=True)
    ctx.store.update_job(job.id, status=Status.RUNNING, owner_pid=os.getpid(), pid=os.getpid(),
                         started_at=time.time())
    assert ctx.store.try_lease(job.id, ["cpu:0"], this_process())
    return job


def test_a_waiting_foreground_job_names_the_holder_and_what_to_do(ctx, capsys):
    holder = _holder(ctx)
    waiter = ctx.manager.create("model", "second run", {"name": "second run"}, needs={"pool": "cpu"},
                                foreground=True)
    seen: list[dict] = []
    original = ctx.manager.run_foreground

    def stop_once_waiting(job_id, on_event=None, poll_s=0.2):
        def spy(event):
            on_event(event)
            seen.append(event)
            if event["type"] == "waiting":
                raise KeyboardInterrupt  # what Ctrl-C does: the job is aborted, the command exits
        return original(job_id, on_event=spy, poll_s=0.05)

    def give_up(signum, frame):  # a command that never says why it waits fails, not hangs
        raise KeyboardInterrupt

    ctx.manager.run_foreground = stop_once_waiting
    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(20)
    try:
        with pytest.raises(typer.Exit):  # exit 130 after "aborted"
            run_in_foreground(ctx, waiter)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    [waiting] = [e for e in seen if e["type"] == "waiting"]
    assert waiting["message"] == f"waiting for job {holder.id} (model first run) to free the CPU"
    assert waiting["holders"] == [holder.id]
    said = " ".join(capsys.readouterr().err.split())
    assert f"waiting for job {holder.id} (model first run) to free the CPU" in said
    assert "--submit" in said and f"trainyard jobs abort {holder.id}" in said
    assert ctx.store.get_job(waiter.id).status == Status.ABORTED
