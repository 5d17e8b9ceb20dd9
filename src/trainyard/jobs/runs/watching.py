"""Watching a launched job: fold its events into the store, stop it when asked, record its end.

`Watching` looks at one launched job per tick (or when an action asks for a look now). A job
whose owner is gone is adopted first (one manager wins, by compare-and-set); one owned on another
machine that fell silent ends from here. It owns no state of its own: the processes and event
tails are the manager's `Children` (jobs/runs/children.py), a sweep's early stops the
`EarlyStopper`'s (jobs/runs/early_stop.py), the end is recorded by the manager's ``finish``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from trainyard.core.paths import JobFolder
from trainyard.core.processes import process_alive
from trainyard.core.status import Status
from trainyard.jobs.runs import heartbeat, runner
from trainyard.jobs.runs.actions import RESUME_COMMANDS
from trainyard.jobs.runs.children import Children
from trainyard.jobs.runs.early_stop import EarlyStopper
from trainyard.jobs.runs.ownership import Ownership
from trainyard.jobs.runs.progress import fold_events
from trainyard.jobs.store.store import Job, Store

LAUNCH_S = 60.0  # how long a job claimed here may go without a recorded pid before it counts as dead
Finish = Callable[[Job, Status, "str | None"], bool]  # the manager's: end a job as read


class Watching:
    """Watches launched jobs for ``owner`` (this manager), through ``children``."""

    def __init__(self, store: Store, owner: Ownership, children: Children, early_stop: EarlyStopper,
                 folder: Callable[[str], JobFolder], get: Callable[[str], Job], finish: Finish):
        self.store = store
        self._owner, self._children, self._early_stop = owner, children, early_stop
        self._folder, self._get, self._finish = folder, get, finish

    def watch(self, job: Job) -> None:
        """One look at ``job`` (launched): adopt it if its owner is gone, fold its new events,
        stop it if asked, and record its end once its process has exited."""
        adopted = not self._owner.mine(job)
        if adopted:
            if self._owner.owner_alive(job):
                return  # someone else watches it
            if self._owner.elsewhere(job):  # its process ran there too: nothing here to check or stop
                self._finish(job, *self._silent_end(job))
                return
            self._owner.heartbeat.beat(force=True)
            if not self.store.update_job_if(job, **self._owner.owner):  # adopt an orphan, and its leases
                return  # another manager adopted it first
            self.store.hold_leases(job.id, self._owner.holder)
            job = self._get(job.id)
        fold_events(self.store, job, self._children.tail(job.id))
        self._early_stop.review(job)
        process = self._children.process(job.id)
        if process is not None:
            returncode = process.poll()
            if returncode is None:
                self._children.stop_if_asked(job)
                return
        elif job.pid is None and not adopted and time.time() - (job.started_at or 0) < LAUNCH_S:
            # Claimed by this process, and not by this manager: another one here (the CLI's beside
            # a server's, in tests) is launching it; its pid is recorded next. Not a death.
            return
        elif process_alive(job.pid, job.started_at):
            self._children.stop_if_asked(job)
            return
        else:
            returncode = None
        fold_events(self.store, job, self._children.tail(job.id))
        self._record_end(job, returncode, seen=process is not None)

    def _silent_end(self, job: Job) -> tuple[Status, str | None]:
        """How a job ends whose holder elsewhere went silent: as its events say, when they say it
        ended (it finished while its server was killed: a server that took over marked it
        failed, for good), else interrupted (heartbeat.silent_end). The folder is shared."""
        reported = runner.reported_end(self._folder(job.id), job.started_at)
        if reported is None:
            return heartbeat.silent_end(job, heartbeat.silent_for(self.store, job))
        status, error = reported
        # A failure its holder reported just before going silent is mostly that silence seen from
        # the other side (a cut host's launcher: "lost the Ray cluster"): its checkpoint remains.
        return status, _interrupted(job, error) if status == Status.FAILED else error

    def _record_end(self, job: Job, returncode: int | None, seen: bool) -> None:
        """The job's process has gone (``seen``: this manager saw it exit, with ``returncode``)."""
        fresh = self.store.get_job(job.id)
        status, error = runner.final_status(self._folder(job.id), returncode, bool(fresh and fresh.abort_requested),
                                            job.started_at)
        if not seen and status == Status.FAILED:
            error = _interrupted(job, error)  # nobody saw it end (its command or the server was killed)
        self._finish(job, status, error)


def _interrupted(job: Job, error: str | None) -> str | None:
    """A failure nobody here saw happen, said as an interruption with the command that continues
    the job from its last checkpoint (a resumable kind's); other kinds' errors as they are."""
    if job.kind not in RESUME_COMMANDS:
        return error
    return f"interrupted: {error}; `{RESUME_COMMANDS[job.kind].format(job.id)}` continues it from its last checkpoint"
