"""Running one job from a command, in the foreground: the job lives and dies with its command.

Ctrl-C, SIGTERM and SIGHUP (its terminal closed) abort the job, which ends ``aborted`` with its
checkpoints kept, and the command exits with 128 + the signal's number. SIGKILL cannot be caught:
for that the runner starts the job's process tethered to this one (PR_SET_PDEATHSIG, see
core/tethered.py), so the kernel kills it too, and the ranks of a torchrun job die with their
launcher (training/run.py). Whichever manager ticks next then ends the row as interrupted.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from trainyard.core.events import EventTail
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.jobs.scheduling.waiting import holder_ids
from trainyard.jobs.store.store import Job, Store


class Manager(Protocol):
    """What a foreground run uses of jobs/runs/manager.JobManager (which imports this module)."""

    store: Store

    def folder(self, job_id: str) -> JobFolder: ...
    def tick(self, only: str | None = None) -> None: ...
    def get(self, job_id: str) -> Job: ...
    def process(self, job_id: str) -> subprocess.Popen | None: ...
    def abort(self, job_id: str) -> Job: ...

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken as Ctrl-C is; ``exit_code``: what a shell reports for it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


@contextmanager
def signals_interrupt() -> Iterator[list[int]]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` in the main thread,
    once: a second one while the job is being aborted must not cut that short. Yields the
    signals received: a signal that lands while Python runs a weakref callback or a ``__del__``
    has its exception printed and dropped ("Exception ignored in ..."), so the watcher also
    raises for a signal it finds there (`raise_if_signalled`)."""
    raised: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield raised  # only the main thread may set handlers (a test driving a job from a thread)
        return

    def handler(signum, frame) -> None:
        if not raised:
            raised.append(signum)
            raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield raised
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def raise_if_signalled(raised: list[int]) -> None:
    """Raise for a stop signal whose exception was swallowed where it landed."""
    if raised:
        raise Interrupted(raised[0])


def run(manager: Manager, job_id: str, on_event: Callable[[dict], None] | None, poll_s: float) -> Job:
    """Start and watch the job from this process until it ends; abort it if interrupted.

    Besides the job's own events, ``on_event`` gets ``{"type": "waiting", "message", "holders"}``
    each time the reason the job cannot start changes: a bar at 0 % with a ticking clock looked
    like a hang, where the browser said which job holds the CPU."""
    tail = EventTail(manager.folder(job_id).events)
    waited_for: str | None = None
    with signals_interrupt() as raised:
        try:
            while True:
                manager.tick(only=job_id)
                for _, event in tail.read_new():
                    if on_event:
                        on_event(event)
                raise_if_signalled(raised)
                job = manager.get(job_id)
                if job.status.is_final:
                    return job
                if on_event and job.status == Status.WAITING and job.status_detail != waited_for:
                    waited_for = job.status_detail
                    on_event({"type": "waiting", "message": waited_for,
                              "holders": [h for h in holder_ids(manager.store, job.needs) if h != job_id]})
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
