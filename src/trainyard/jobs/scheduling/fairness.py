"""Sharing the machine between users: each user's cap on running jobs, and a fair queue.

A fair queue: one user's 64-run sweep must not starve another user's single job. The queued
jobs a tick offers are ordered by how many jobs their owner runs already plus their place in
that owner's own queue (oldest first), then by age: round-robin between users, and a user
with nothing running goes first. Jobs without an owner (made before accounts) count as one user.

A quota: a user with ``max_jobs`` running jobs (their own cap, else TRAINYARD_USER_MAX_JOBS;
0 is no cap) waits, and the job's status says why.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from sqlalchemy import func, select

from trainyard.core.status import Status
from trainyard.jobs.scheduling.readiness import Blocked
from trainyard.jobs.store.account_tables import UserRow
from trainyard.jobs.store.job_tables import launched
from trainyard.jobs.store.store import Job, Store


def fair_order(jobs: list[Job]) -> list[Job]:
    """``jobs`` (oldest first) with the launched ones first, then the queued ones round-robin."""
    running = Counter(job.owner or "" for job in jobs if launched(job))
    places: defaultdict[str, int] = defaultdict(int)
    keyed = []
    for job in jobs:
        if launched(job):
            continue
        owner = job.owner or ""
        keyed.append((running[owner] + places[owner], job.created_at, job.id, job))
        places[owner] += 1
    keyed.sort(key=lambda entry: entry[:3])
    return [job for job in jobs if launched(job)] + [entry[3] for entry in keyed]


def over_quota(store: Store, job: Job, default_max: int) -> Blocked | None:
    """Why ``job`` waits for its owner's quota, or None when it may start."""
    if not job.owner:
        return None
    with store.session() as s:
        user = s.get(UserRow, job.owner)
        cap = user.max_jobs if user is not None and user.max_jobs is not None else default_max
        if cap <= 0:
            return None
        running = s.execute(select(func.count()).select_from(Job).where(
            Job.owner == job.owner, Job.status == Status.RUNNING)).scalar_one()
    if running < cap:
        return None
    return Blocked(f"waiting for a slot of {job.owner}'s: {running} of their {cap} jobs at once are running")
