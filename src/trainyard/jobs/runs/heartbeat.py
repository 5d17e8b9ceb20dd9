"""Heartbeats: how a manager tells that the holder of a job on another machine is gone.

A pid means something only on its own machine, so a manager checks a holder on its own host by
pid (the fast path, jobs/runs/manager.py) and any other holder by its heartbeat: every manager that
holds an active job renews its row in ``holders`` every few seconds, from its tick (the server's
scheduler ticks twice a second, a foreground CLI five times). A holder silent for longer than
TRAINYARD_HEARTBEAT_TIMEOUT_S is gone, with its machine or its network; any manager then ends
its running jobs as interrupted (`jobs resume` continues a model from its last checkpoint).

A holder that never beat (a trainyard from before heartbeats, or one that has just created its
job) is judged by the job row's own times instead, which its holder keeps current.
"""

from __future__ import annotations

import time
from typing import cast

from sqlalchemy import delete, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError

from trainyard.core.status import Status
from trainyard.jobs.store.liveness_tables import Holder
from trainyard.jobs.store.store import Job, Store

# Rows of holders silent this long are deleted (a CLI that ended cleanly never beats again).
FORGET_AFTER_S = 24 * 3600.0


class Heartbeat:
    """This manager's heartbeat: ``beat()`` renews it at most every ``interval_s``."""

    def __init__(self, store: Store, host: str, pid: int, started: float, timeout_s: float):
        self.store, self.host, self.pid, self.started = store, host, pid, started
        self.timeout_s = timeout_s
        # Several beats per timeout: one missed (a slow tick) is no death.
        self.interval_s = min(5.0, timeout_s / 4)
        self._last = float("-inf")

    def beat(self, force: bool = False) -> None:
        """Renew the row; ``force``: now, as before taking a job (an old row would read as dead)."""
        now = time.monotonic()
        if force or now - self._last >= self.interval_s:
            renew(self.store, self.host, self.pid, self.started)
            self._last = now


def renew(store: Store, host: str, pid: int, started: float) -> None:
    now = time.time()
    values = dict(started=started, beat_at=now)
    query = update(Holder).where(Holder.host == host, Holder.pid == pid).values(**values)
    with store.session.begin() as s:
        if cast(CursorResult, s.execute(query)).rowcount:
            return
    try:
        with store.session.begin() as s:
            s.add(Holder(host=host, pid=pid, **values))
            # Holders gone for good, forgotten by whoever writes a new one (a rare write).
            s.execute(delete(Holder).where(Holder.beat_at < now - FORGET_AFTER_S))
    except IntegrityError:  # another thread of this process inserted it first: it is fresh
        pass


def last_beat(store: Store, host: str, pid: int) -> float | None:
    with store.session() as s:
        return s.scalar(select(Holder.beat_at).where(Holder.host == host, Holder.pid == pid))


def silent_for(store: Store, job: Job) -> float:
    """Seconds since the job's holder last gave a sign of life: its heartbeat, or, when it has
    none, the latest write to the job row."""
    beat = last_beat(store, job.owner_host or "", job.owner_pid or 0)
    if beat is None:
        beat = job.updated_at or job.started_at or job.created_at or 0.0
    return max(0.0, time.time() - beat)


def stopped_answering(job: Job, silent_s: float) -> str:
    """The error of a job whose holder went silent (the words `jobs list` shows)."""
    message = f"interrupted: {job.owner_host} stopped answering (no heartbeat for {silent_s:.0f} s)"
    if job.kind == "model":
        message += f"; `trainyard jobs resume {job.id}` continues it from its last checkpoint"
    return message



def silent_end(job: Job, silent_s: float) -> tuple[Status, str | None]:
    """How a job ends whose holder on another machine went silent: aborted if that was asked
    for (its holder never saw the request), else failed as interrupted."""
    if job.abort_requested:
        return Status.ABORTED, None
    return Status.FAILED, stopped_answering(job, silent_s)
