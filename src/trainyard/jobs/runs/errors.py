"""The errors of requests about jobs, and whether a job's process has started.

Kept apart from the manager so that the modules it delegates to (jobs/runs/actions.py) can raise
them; ``trainyard.jobs.runs.manager`` re-exports them, where callers have always found them.
"""

from __future__ import annotations

from trainyard.core.errors import Conflict, NotFound, UserError
from trainyard.core.status import Status
from trainyard.jobs.store.store import Job


def launched(job: Job) -> bool:
    """Has the job's process started? A cluster job's launcher runs while the job waits for
    the cluster (status waiting, with its pid), so ``waiting`` alone does not tell."""
    return job.status == Status.RUNNING or (job.status == Status.WAITING and job.pid is not None)


class JobError(UserError):
    """A request about a job that cannot be met as given; the message says why (HTTP 400)."""


class JobNotFound(NotFound, JobError):
    """The job (or dataset, or model) named does not exist (HTTP 404)."""


class JobConflict(Conflict, JobError):
    """The job exists but its state does not allow this: ended, still running, in use (HTTP 409)."""
