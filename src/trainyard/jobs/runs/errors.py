"""Whether a job's process has started, and the errors of requests about jobs.

The errors are defined with the kinds (jobs/kinds/errors.py: creating a job raises them, and the
kinds sit below the runs); they are re-exported here and from ``trainyard.jobs.runs.manager``,
where the modules the manager delegates to (jobs/runs/actions.py) and callers find them.
"""

from __future__ import annotations

from trainyard.core.status import Status
from trainyard.jobs.kinds.errors import JobConflict, JobError, JobNotFound  # noqa: F401 (re-exported)
from trainyard.jobs.store.store import Job


def launched(job: Job) -> bool:
    """Has the job's process started? A cluster job's launcher runs while the job waits for
    the cluster (status waiting, with its pid), so ``waiting`` alone does not tell."""
    return job.status == Status.RUNNING or (job.status == Status.WAITING and job.pid is not None)
