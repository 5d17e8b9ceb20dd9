"""Whether a process still runs: the liveness check the job runner, its watchers and the GPU
leases share (a job's pid, a lease holder's), kept below them all."""

from __future__ import annotations

import psutil


def process_alive(pid: int | None, started_at: float | None = None) -> bool:
    """True if ``pid`` runs and (when given) was started around ``started_at`` (no reused pid)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started_at is None or proc.create_time() <= started_at + 5
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
