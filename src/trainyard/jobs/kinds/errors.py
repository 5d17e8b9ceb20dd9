"""The errors of requests about jobs: refused as given (400), not found (404), in conflict (409).

Defined here, with the kinds that create jobs, because the kinds sit below the runs (jobs/runs
imports jobs/kinds, never the reverse); jobs/runs/errors.py and jobs/runs/manager.py re-export
them, where callers have always found them.
"""

from __future__ import annotations

from trainyard.core.errors import Conflict, NotFound, UserError


class JobError(UserError):
    """A request about a job that cannot be met as given; the message says why (HTTP 400)."""


class JobNotFound(NotFound, JobError):
    """The job (or dataset, or model) named does not exist (HTTP 404)."""


class JobConflict(Conflict, JobError):
    """The job exists but its state does not allow this: ended, still running, in use (HTTP 409)."""
