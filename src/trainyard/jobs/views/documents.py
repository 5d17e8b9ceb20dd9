"""Jobs as the documents that the API, the CLI's --json and the pages all use (jobs/kinds/documents.py)."""

from __future__ import annotations

import time

from sqlalchemy import Row, select

from trainyard.core.status import Status
from trainyard.jobs.kinds.documents import HistoryEntry, JobBrief, JobDetail
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs.manager import JobManager
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.labels import labels_of
from trainyard.jobs.store.store import Job, Store


def job_brief(job: Job | Row) -> JobBrief:
    """The fields every job has, from the database alone (cheap enough for long listings)."""
    now = time.time()
    started = job.started_at
    return JobBrief(
        id=job.id, kind=job.kind, name=job.name, status=job.status, status_detail=job.status_detail,
        error=job.error, progress=round(job.progress or 0.0, 4), eta=job.eta,
        elapsed=((job.finished_at or now) - started) if started else None,
        created_at=job.created_at, started_at=job.started_at, finished_at=job.finished_at,
        updated_at=job.updated_at, parent=job.parent_id, group=job.group, needs=job.needs, summary=job.summary,
        resources=(job.summary or {}).get("resources", []) if job.status == Status.RUNNING else [],
        owner=job.owner, visibility=job.visibility or "private",
    )


def list_briefs(store: Store) -> list[JobBrief]:
    """``job_brief`` of every job, newest first, for the home page's tables.

    Built from plain rows rather than ORM objects (a third faster with thousands of jobs);
    a row has the same attribute names as a Job.
    """
    query = accounts.only_visible(select(Job.__table__).order_by(Job.created_at.desc(), Job.id.desc()), Job)
    with store.session() as s:
        return [job_brief(row) for row in s.execute(query)]


def job_detail(manager: JobManager, job: Job) -> JobDetail:
    """A job with everything its kind adds (a dataset's classes and counts, a model's metrics):
    the kind's own document (jobs/kinds/documents.py), made by its ``describe`` from the common part."""
    history = [HistoryEntry(status=h.status, detail=h.detail, time=h.time) for h in manager.store.history(job.id)]
    labels = labels_of(manager.store, [job.id])[job.id]
    common = JobDetail(**dict(job_brief(job)), history=history, tags=labels.tags, notes=labels.notes)
    return get_kind(job.kind).describe(job, manager.folder(job.id), common)
