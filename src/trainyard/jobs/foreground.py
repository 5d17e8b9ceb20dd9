"""Running one job from a command, in the foreground (the CLI's way)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from trainyard.core.events import EventTail

if TYPE_CHECKING:  # the manager imports this module
    from trainyard.jobs.manager import JobManager
    from trainyard.jobs.store import Job


def run(manager: JobManager, job_id: str, on_event: Callable[[dict], None] | None, poll_s: float) -> Job:
    """Start and watch the job from this process until it ends; abort it if interrupted."""
    tail = EventTail(manager.folder(job_id).events)
    try:
        while True:
            manager.tick(only=job_id)
            for _, event in tail.read_new():
                if on_event:
                    on_event(event)
            job = manager.get(job_id)
            if job.status.is_final:
                return job
            _wait_for_exit(manager.process(job_id), poll_s)
    except KeyboardInterrupt:
        manager.abort(job_id)
        raise


def _wait_for_exit(proc: subprocess.Popen | None, seconds: float) -> None:
    """Sleep ``seconds``, or less if the job's process (started here) exits meanwhile.

    The next tick then records the end at once instead of up to a poll later: for a short
    job (a small dataset build) that wait was a good part of what the user waited for.
    """
    if proc is None or proc.poll() is not None:  # not ours, or already seen to end: no busy loop
        time.sleep(seconds)
        return
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pass
