"""What a user asks of a job: abort it, resume it, delete it (the manager's part of each).

Functions of the manager, kept apart so that jobs/runs/manager.py holds the lifecycle:
creating, starting and watching.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from trainyard.core.events import EventWriter
from trainyard.core.status import Status
from trainyard.jobs.runs import runner
from trainyard.jobs.runs.errors import JobConflict, JobError, launched
from trainyard.jobs.store.store import Job

if TYPE_CHECKING:
    from trainyard.jobs.runs.manager import JobManager


def abort(manager: JobManager, job_id: str) -> Job:
    job = manager.get(job_id)
    if job.status.is_final:
        raise JobConflict(f"job {job_id} has already ended ({job.status})")
    if not launched(job):
        with manager._lock:
            if manager._finish(job, Status.ABORTED, None):
                return manager.get(job_id)
        job = manager.get(job_id)  # a manager started it meanwhile: abort it running
        if job.status.is_final:
            return job
    manager.store.update_job(job_id, abort_requested=True)
    # Only a process on this machine can be signalled from here; else its starter sees the
    # request (after its launch, or in its next tick on another machine).
    if job.pid and job.owner_host in (None, manager.host):
        manager._stopping.add(job_id)
        runner.terminate_group(job.pid, manager.settings.abort_grace_s, manager._children.get(job_id))
    if manager._mine(job) or not manager._owner_alive(job):
        with manager._lock:
            manager._watch(manager.get(job_id))
    return manager.get(job_id)

# The kinds of job that continue where they stopped, and the command that asks for it.
RESUME_COMMANDS = {"model": "trainyard jobs resume {}", "dataset": "trainyard dataset resume {}"}


def resume(manager: JobManager, job_id: str, foreground: bool = False) -> Job:
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
        # The last attempt's "done" or "failed" must not decide how this one ends, should its
        # process die before it reports anything (runner.final_status reads the last status).
        with EventWriter(manager.folder(job_id).path) as events:
            events.status(Status.QUEUED.value)
    return manager.get(job_id)


def delete(manager: JobManager, job_id: str) -> None:
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
