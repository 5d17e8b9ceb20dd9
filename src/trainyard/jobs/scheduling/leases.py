"""Reclaiming leases nobody holds any more, so a slot is never lost for good.

A lease records the manager process that took it (pid and start time). A lease is stale when
its job has ended or is gone (its release failed, e.g. on a read-only database), or when its
holder died before the job started. A running job's leases go with the job: the manager that
adopts the job becomes their holder; they are released when it finishes the job.
"""

from __future__ import annotations

import os

import psutil

from trainyard.core.processes import process_alive
from trainyard.core.status import Status
from trainyard.jobs.store.job_tables import Lease
from trainyard.jobs.store.store import Store


def this_process() -> tuple[int, float]:
    """(pid, start time) of this process: what a lease records as its holder."""
    return os.getpid(), psutil.Process().create_time()


def holder_alive(lease: Lease) -> bool:
    if lease.holder_pid is None:
        return True  # a lease from before holders were recorded: its job decides
    return process_alive(lease.holder_pid, lease.holder_started)  # a reused pid started later


def reclaim_stale_leases(store: Store) -> list[str]:
    """Release the stale leases (see the module docstring); return their resources."""
    stale = []
    for lease in store.lease_rows():
        job = store.get_job(lease.job_id)
        if job is None or job.status.is_final:
            stale.append(lease.resource)
        elif job.status != Status.RUNNING and not holder_alive(lease):
            stale.append(lease.resource)  # leased, then its manager died before starting it
    if stale:
        store.drop_leases(stale)
    return stale
