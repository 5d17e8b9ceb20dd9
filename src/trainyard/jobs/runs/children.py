"""The job processes one manager started, and its reading of them.

`Children` owns what only the process that launched a job can hold: its ``Popen`` (to poll the
exit code and to kill it without a pid race), the tail of its events.jsonl read so far, and which
jobs it is terminating. jobs/runs/starting.py adds to it; jobs/runs/watching.py reads and stops
through it; the manager forgets a job here once the store says it ended.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable

from trainyard.core.events import EventTail
from trainyard.core.paths import JobFolder
from trainyard.jobs.runs import runner
from trainyard.jobs.store.store import Job


class Children:
    """The processes this manager started (by job id), their event tails, and those it stops."""

    def __init__(self, folder: Callable[[str], JobFolder], grace_s: float):
        self._folder = folder
        self._grace_s = grace_s  # from SIGTERM to SIGKILL
        self._processes: dict[str, subprocess.Popen] = {}
        self._tails: dict[str, EventTail] = {}
        self._stopping: set[str] = set()  # jobs being terminated by this process

    def add(self, job_id: str, process: subprocess.Popen) -> None:
        """A job just launched here: its events are read from the first one."""
        self._processes[job_id] = process
        self._tails[job_id] = EventTail(self._folder(job_id).events, next_id=0)

    def process(self, job_id: str) -> subprocess.Popen | None:
        """The job's process, if this manager started it."""
        return self._processes.get(job_id)

    def tail(self, job_id: str) -> EventTail:
        """The job's events.jsonl as read so far (from the start for a job adopted here)."""
        return self._tails.setdefault(job_id, EventTail(self._folder(job_id).events))

    def forget(self, job_id: str) -> None:
        """The job has ended in the store: nothing of it is held here any more."""
        self._processes.pop(job_id, None)
        self._tails.pop(job_id, None)
        self._stopping.discard(job_id)

    def stop_lost(self, held: set[str]) -> None:
        """Stop what runs here for jobs this manager no longer holds (``held``: those it does): a
        stall longer than the heartbeat timeout made another manager end them, and running on
        would run them twice."""
        for job_id in [j for j in self._processes if j not in held]:
            process = self._processes.pop(job_id)
            self._tails.pop(job_id, None)
            threading.Thread(target=runner.terminate_group, daemon=True,
                             args=(process.pid, self._grace_s, process)).start()

    def stop_if_asked(self, job: Job) -> None:
        """Stop a job whose abort was asked for where it could not be signalled (another machine).

        In a thread: the SIGKILL comes a grace period later, and ticks must go on meanwhile.
        """
        if job.abort_requested and job.id not in self._stopping:
            self._stopping.add(job.id)
            threading.Thread(target=runner.terminate_group, daemon=True,
                             args=(job.pid, self._grace_s, self._processes.get(job.id))).start()

    def terminate(self, job: Job) -> None:
        """SIGTERM the job's process group on this machine (once it has one), SIGKILL after the
        grace period; returns when it has gone."""
        if job.pid:
            self._stopping.add(job.id)
            runner.terminate_group(job.pid, self._grace_s, self._processes.get(job.id))
