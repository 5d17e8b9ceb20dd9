"""A cluster rank's side of the fence (core/fence.py): it stops within seconds of its attempt's
end and writes nothing into the job after it.

`install` (run.py, when the launcher gave the rank ``TRAINYARD_FENCE``) starts a thread that
reads the fence every `POLL_S`. Writes check it too, at the moment they happen: the rank's
events (run.RankEvents) are dropped, and a checkpoint is written inside `checkpoint_write`,
which checks the fence before the temp file is made and again once it is on disk, just before
its rename (where the temp file is deleted instead), so nothing lands once the fence is up, even
between two polls. A file fence cannot be atomic with a rename: a write whose last check came a
moment before the end still lands (its data was written before the end), and it is the last.
When the thread sees the fence it takes the same lock, so a checkpoint write in flight ends
first (deleting its own temp file) and none starts after; it then prints one line to the rank's
own output ("stopped: job X ended (reason)") and ends the process: the training thread may be
blocked in a collective with a peer that is gone, which no flag could interrupt.

Without ``TRAINYARD_FENCE`` (a local job, a test calling train()) every call here is a no-op.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from trainyard.core import environment, fence
from trainyard.core.jobproc import EXIT_ABORTED
from trainyard.core.paths import job_id_of

POLL_S = 1.0
WRITE_WAIT_S = 30.0  # how long a checkpoint write in flight may take to see the fence and let go
_watch: fence.Watch | None = None
_job = ""
_said = threading.Lock()
# Held by a checkpoint write from before its temp file exists until after its rename, and by the
# guard from the moment it sees the fence until the process ends: no temp file is left behind.
_writing = threading.Lock()


class Fenced(RuntimeError):
    """The job's attempt ended: this rank may write nothing more."""


def install(job_dir: str | os.PathLike) -> None:
    """Watch the fence of the attempt named in the environment (no-op without one)."""
    global _watch, _job
    value = environment.attempt_fence()
    if not value or _watch is not None:
        return
    _watch, _job = fence.Watch.for_rank(job_dir, value), job_id_of(job_dir)  # job_dir: its work folder
    threading.Thread(target=_guard, name="fence", daemon=True).start()


def reason() -> str | None:
    """Why this rank must stop writing, or None (always None without a fence)."""
    return _watch.reason() if _watch is not None else None


def resize_requested() -> bool:
    """Whether the launcher asks this elastic job's ranks to stop at the next epoch boundary."""
    return _watch is not None and _watch.reason() is None and _watch.resize is not None


def check() -> None:
    """Raise Fenced once the attempt has ended (before a checkpoint's rename)."""
    why = reason()
    if why is not None:
        raise Fenced(f"job {_job} ended ({why})")


@contextmanager
def checkpoint_write() -> Iterator[None]:
    """Hold off the guard's exit for one checkpoint write; raise Fenced if the attempt has ended."""
    with _writing:
        check()
        yield


def say_stopped() -> bool:
    """Print this rank's one line about the fence, once; False when there is no fence up."""
    why = reason()
    if why is None:
        return False
    if _said.acquire(blocking=False):
        print(f"stopped: job {_job} ended ({why})", file=sys.stderr, flush=True)
    return True


def _guard() -> None:
    while reason() is None:
        time.sleep(POLL_S)
    # A write in flight sees the fence before its rename and deletes its temp file; one that
    # would start now waits on the lock until the process is gone.
    _writing.acquire(timeout=WRITE_WAIT_S)
    say_stopped()
    os._exit(EXIT_ABORTED)
