"""Whether a job's process has started (defined with the Job, in the store), and the errors of requests about jobs.

The errors are defined with the kinds (jobs/kinds/errors.py: creating a job raises them, and the
kinds sit below the runs); they are re-exported here and from ``trainyard.jobs.runs.manager``,
where the modules the manager delegates to (jobs/runs/actions.py) and callers find them.
"""

from __future__ import annotations

from trainyard.jobs.kinds.errors import JobConflict, JobError, JobNotFound  # noqa: F401 (re-exported)
from trainyard.jobs.store.job_tables import launched  # noqa: F401 (re-exported: the scheduler reads it too)
