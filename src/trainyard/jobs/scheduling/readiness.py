"""Why a queued job cannot start yet: the job it needs has not finished, or never will (busy
resources are named by jobs/scheduling/waiting.py). The words are what the job's status detail shows."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.core.status import Status
from trainyard.jobs.store.store import Job, Store


@dataclass(frozen=True)
class Blocked:
    """A queued job that cannot start: ``reason`` in the words its status detail (or, when it
    ``never`` will start, its error) shows."""

    reason: str
    never: bool = False  # its input failed or is gone: the job fails instead of waiting


def missing_input(store: Store, job: Job) -> Blocked | None:
    """Why the job cannot start yet, or None if nothing it needs is missing."""
    if not job.parent_id:
        return None
    parent = store.get_job(job.parent_id)
    if parent is None:
        return Blocked(f"the job it needs, {job.parent_id}, was deleted", never=True)
    if parent.status == Status.DONE:
        return None
    if parent.status.is_final:
        return Blocked(f"its {parent.kind} {parent.name} ({parent.id}) {parent.status}", never=True)
    return Blocked(f"waiting for {parent.kind} {parent.name} to finish")
