"""The one "get a job of this kind or fail" lookup, for the API, the CLI and the job builders.

A missing job and a job of another kind are the same answer, 404 (``JobNotFound``): the id does
not name a job of the kind asked for. The message of a wrong kind says what the id is instead.
"""

from __future__ import annotations

from trainyard.jobs.kinds.errors import JobNotFound
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.store import Job, Store


def job_of_kind(store: Store, job_id: str, kind: str | None = None) -> Job:
    """The job ``job_id``, of ``kind`` when one is given; JobNotFound (404) otherwise."""
    job = store.get_job(job_id)
    if job is None or not accounts.may_see(job):
        raise JobNotFound(f"no {kind or 'job'} with id {job_id!r}")
    if kind and job.kind != kind:
        raise JobNotFound(f"no {kind} with id {job_id!r}: job {job_id} is a {job.kind} job, not a {kind}")
    return job
