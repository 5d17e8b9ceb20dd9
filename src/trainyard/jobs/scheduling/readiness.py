"""Why a queued job cannot start yet: the job it needs has not finished, or never will (busy
resources are named by jobs/scheduling/waiting.py). The words are what the job's status detail shows."""

from __future__ import annotations

from trainyard.core.status import Status
from trainyard.jobs.store.store import Job, Store


def missing_input(store: Store, job: Job) -> str | None:
    """Why the job cannot start yet ('failed: ...' if it never will), or None if it can."""
    if not job.parent_id:
        return None
    parent = store.get_job(job.parent_id)
    if parent is None:
        return f"failed: the job it needs, {job.parent_id}, was deleted"
    if parent.status == Status.DONE:
        return None
    if parent.status.is_final:
        return f"failed: its {parent.kind} {parent.name} ({parent.id}) {parent.status}"
    return f"waiting for {parent.kind} {parent.name} to finish"

