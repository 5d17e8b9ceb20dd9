"""What a user asks of a job: abort it, resume it, delete it (the manager's part of each).

Functions of the manager, kept apart so that jobs/runs/manager.py holds the lifecycle:
creating, starting and watching. They use only the manager's public side (`Manager` names
it), so this module does not import the manager that imports it.
"""

from __future__ import annotations

import shutil
from typing import Protocol

from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.jobs.runs import server_log
from trainyard.jobs.runs.errors import JobConflict, JobError, launched
from trainyard.jobs.runs.heartbeat import Heartbeat
from trainyard.jobs.store.store import Job, Store


class Manager(Protocol):
    """What these actions use of jobs/runs/manager.JobManager."""

    store: Store
    heartbeat: Heartbeat
    owner: dict  # this manager in a job row (jobs/runs/ownership.py)

    def get(self, job_id: str) -> Job: ...
    def elsewhere(self, job: Job) -> bool: ...
    def folder(self, job_id: str) -> JobFolder: ...
    def finish(self, job: Job, status: Status, error: str | None) -> bool: ...
    def terminate(self, job: Job) -> None: ...
    def look_now(self, job: Job) -> None: ...
    def abort(self, job_id: str) -> Job: ...


def abort(manager: Manager, job_id: str) -> Job:
    job = manager.get(job_id)
    if job.status.is_final:
        raise JobConflict(f"job {job_id} has already ended ({job.status})")
    if not launched(job):
        if manager.finish(job, Status.ABORTED, None):
            return manager.get(job_id)
        job = manager.get(job_id)  # a manager started it meanwhile: abort it running
        if job.status.is_final:
            return job
    manager.store.update_job(job_id, abort_requested=True)
    # Only a process on this machine can be signalled from here; else its starter sees the
    # request (after its launch, or in its next tick on another machine).
    if job.pid and not manager.elsewhere(job):
        manager.terminate(job)
    manager.look_now(job)
    return manager.get(job_id)

# The kinds of job that continue where they stopped, and the command that asks for it.
RESUME_COMMANDS = {"model": "trainyard jobs resume {}", "dataset": "trainyard dataset resume {}"}


def resume(manager: Manager, job_id: str, foreground: bool = False) -> Job:
    """Queue an ended model job again (it continues from its last checkpoint), or a dataset
    build that did not finish (it continues from what it wrote)."""
    job = manager.get(job_id)
    built = job.kind == "dataset" and job.status == Status.DONE
    if job.kind not in RESUME_COMMANDS or not job.status.is_final or built:
        raise JobConflict(f"job {job_id} is a {job.status} {job.kind} job; only an ended model job "
                          f"or an unfinished dataset build can be resumed")
    if (job.summary or {}).get("imported"):
        raise JobError(f"model {job_id} was imported from an archive; fine-tune from it instead "
                       f"(--pretrained {job_id})")
    if foreground:
        manager.heartbeat.beat(force=True)
    detail = "resuming from the last checkpoint" if job.kind == "model" else "resuming the build from what it wrote"
    if manager.store.update_job_if(job, status=Status.QUEUED, error=None, finished_at=None, pid=None,
                                **(manager.owner if foreground else {"owner_pid": None, "owner_host": None}),
                                status_detail=detail):
        # Its own file in the server's part, not the job's events: the last attempt's "done" no
        # longer decides how this one ends (runner.final_status counts statuses since its start).
        server_log.note(manager.folder(job_id), f"queued again, {detail}")
    return manager.get(job_id)


def delete(manager: Manager, job_id: str) -> None:
    job = manager.get(job_id)
    # A dataset's later versions copied what they need; anything else still reads this job.
    users = [c for c in manager.store.children(job_id) if c.kind != "dataset"]
    if users:
        names = ", ".join(f"{c.kind} {c.id}" for c in users[:5])
        raise JobConflict(f"{job.kind} {job_id} is used by other jobs ({names}); delete those first")
    if not job.status.is_final:
        manager.abort(job_id)
    manager.store.delete_job(job_id)
    shutil.rmtree(manager.folder(job_id).path, ignore_errors=True)
