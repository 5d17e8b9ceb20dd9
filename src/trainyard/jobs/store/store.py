"""The job store: jobs, their status history and resource leases, in SQLAlchemy.

The tables are in job_tables.py (Job is read from here too, by most of the code).

SQLite by default; PostgreSQL when several servers share one store (jobs/store/database.py sets up
either). The database indexes jobs; every blob (specs, events, checkpoints, images) lives in the
job's folder. Changes that more than one process may attempt at once (starting a queued job,
adopting an orphan) are compare-and-set updates (``update_job_if``), atomic on both databases.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import cast

from sqlalchemy import delete, event, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from trainyard.core.status import Status
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.account_tables import AuditRow, TokenRow, UserRow  # noqa: F401 (tables of the store)
from trainyard.jobs.store.confinement import ConfinementRow
from trainyard.jobs.store.database import create_tables, open_engine
from trainyard.jobs.store.job_tables import STATUS_VALUES, Deletion, Job, JobLabel, Lease, StatusChange
from trainyard.jobs.store.liveness_tables import DeploymentSetting, Holder  # noqa: F401 (tables of the store)
from trainyard.jobs.store.orm import Base
from trainyard.jobs.store.schema_upgrade import upgrade_table


def _same(column, value):
    return column.is_(None) if value is None else column == value


# Words of the errors a read-only or full disk gives (SQLite, PostgreSQL).
_STORAGE_WORDS = ("readonly", "read-only", "disk i/o", "disk is full", "no space")


def _drop_connection_on_storage_error(context) -> None:
    """Treat a read-only or full disk like a lost connection, so the pool opens fresh ones.

    A SQLite connection that met a read-only file stays read-only for its life; without this
    the server kept failing writes after the disk became writable again.
    """
    text = str(context.original_exception).lower()
    if any(word in text for word in _STORAGE_WORDS):
        context.is_disconnect = True
        context.invalidate_pool_on_disconnect = False  # only the connection that saw it


class Store:
    """Every read and write of the database goes through here."""

    def __init__(self, url: str):
        self.engine = open_engine(url)
        event.listen(self.engine, "handle_error", _drop_connection_on_storage_error)
        create_tables(self.engine, Base.metadata)  # also adds nullable columns older databases lack
        # Indexes and updated_at values that databases made before them lack.
        upgrade_table(self.engine, Base.metadata.tables[Job.__tablename__])
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    # -- jobs --------------------------------------------------------------------------------
    def add_job(self, job: Job) -> Job:
        accounts.stamp(job)  # its owner and visibility; a viewer's is refused (403)
        with self.session.begin() as s:
            s.add(job)
            s.add(accounts.creation_entry(job))  # the audit log's line, with the job or not at all
            s.add(StatusChange(job_id=job.id, status=job.status, detail=job.status_detail))
        return job

    def get_job(self, job_id: str) -> Job | None:
        with self.session() as s:
            return s.get(Job, job_id)

    def list_jobs(self, kind: str | None = None, statuses: Iterable[str] | None = None,
                  oldest_first: bool = False) -> list[Job]:
        """Jobs, newest first (listings) or oldest first (the scheduler's first-come order)."""
        if oldest_first:
            query = select(Job).order_by(Job.created_at, Job.id)
        else:
            query = select(Job).order_by(Job.created_at.desc(), Job.id.desc())
        if kind:
            query = query.where(Job.kind == kind)
        visible = accounts.visible_condition(Job)
        if visible is not None:  # another user's private jobs are not listed (jobs/store/actor.py)
            query = query.where(visible)
        if statuses is not None:
            # An unknown name matches no job (as it did when statuses were plain strings).
            query = query.where(Job.status.in_([Status(s) for s in statuses if s in STATUS_VALUES]))
        with self.session() as s:
            return list(s.scalars(query))

    def children(self, job_id: str) -> list[Job]:
        with self.session() as s:
            return list(s.scalars(select(Job).where(Job.parent_id == job_id)))

    def update_job(self, job_id: str, **fields) -> Job | None:
        """Set fields; a change of ``status`` is recorded in the history."""
        with self.session.begin() as s:
            job = s.get(Job, job_id)
            if job is None:
                return None
            new_status = Status(fields["status"]) if fields.get("status") is not None else None
            if new_status is not None and new_status != job.status:
                s.add(StatusChange(job_id=job_id, status=new_status, detail=fields.get("status_detail")))
            for key, value in fields.items():
                setattr(job, key, value)
            job.updated_at = time.time()
            return job

    def update_job_if(self, job: Job, **fields) -> bool:
        """Set fields only if the job's status and owner are still what ``job`` (a read) says.

        One UPDATE ... WHERE, so of several processes acting on the same read exactly one wins
        (PostgreSQL re-checks the WHERE after waiting for a concurrent writer's row lock; SQLite
        writes one at a time). False when another process changed the job first.
        """
        return self.change_job_if(job, fields)

    def change_job_if(self, job: Job, fields: dict, before_commit: Callable[[], object] | None = None) -> bool:
        """`update_job_if`, doing ``before_commit`` only if the change is made, before anyone
        can read it (the row stays locked meanwhile)."""
        if fields.get("status") is not None:
            fields["status"] = Status(fields["status"])
        query = (update(Job).where(Job.id == job.id, Job.status == job.status,
                                   _same(Job.owner_pid, job.owner_pid), _same(Job.owner_host, job.owner_host))
                 .values(**fields, updated_at=time.time()).execution_options(synchronize_session=False))
        with self.session.begin() as s:
            result = cast(CursorResult, s.execute(query))
            if result.rowcount != 1:
                return False
            new_status = fields.get("status")
            if new_status is not None and new_status != job.status:
                s.add(StatusChange(job_id=job.id, status=new_status, detail=fields.get("status_detail")))
            if before_commit is not None:
                before_commit()
        return True

    def history(self, job_id: str) -> list[StatusChange]:
        query = select(StatusChange).where(StatusChange.job_id == job_id).order_by(StatusChange.id)
        with self.session() as s:
            return list(s.scalars(query))

    def delete_job(self, job_id: str) -> None:
        with self.session.begin() as s:
            s.execute(delete(StatusChange).where(StatusChange.job_id == job_id))
            s.execute(delete(Lease).where(Lease.job_id == job_id))
            s.execute(delete(JobLabel).where(JobLabel.job_id == job_id))
            s.execute(delete(ConfinementRow).where(ConfinementRow.job_id == job_id))
            if cast(CursorResult, s.execute(delete(Job).where(Job.id == job_id))).rowcount:
                s.add(Deletion(job_id=job_id))

    # -- leases ------------------------------------------------------------------------------
    def try_lease(self, job_id: str, resources: list[str], holder: tuple[int, float] | None = None) -> bool:
        """Lease all of ``resources`` to the job in one transaction, or none of them.

        ``holder`` is (pid, start time) of the managing process (None: unknown, never reclaimed
        for being gone). Inserted in sorted order: on PostgreSQL a competing insert of the same
        key waits for the first transaction, so two jobs taking [0, 1] and [1, 0] would deadlock.
        """
        pid, started = holder or (None, None)
        try:
            with self.session.begin() as s:
                for resource in sorted(resources):
                    s.add(Lease(resource=resource, job_id=job_id, holder_pid=pid, holder_started=started))
                    s.flush()  # one INSERT each, in this order
            return True
        except IntegrityError:
            return False

    def release(self, job_id: str, resources: list[str] | None = None) -> None:
        """Free the job's leases: all of them, or just ``resources``."""
        query = delete(Lease).where(Lease.job_id == job_id)
        if resources is not None:
            query = query.where(Lease.resource.in_(resources))
        with self.session.begin() as s:
            s.execute(query)

    def lease_rows(self) -> list[Lease]:
        with self.session() as s:
            return list(s.scalars(select(Lease)))

    def drop_leases(self, resources: list[str]) -> None:
        with self.session.begin() as s:
            s.execute(delete(Lease).where(Lease.resource.in_(resources)))

    def hold_leases(self, job_id: str, holder: tuple[int, float]) -> None:
        """Make ``holder`` the holder of the job's leases (a manager adopting the job)."""
        with self.session.begin() as s:
            s.execute(update(Lease).where(Lease.job_id == job_id)
                      .values(holder_pid=holder[0], holder_started=holder[1]))

    def leases(self) -> dict[str, str]:
        """Map of leased resource -> job id."""
        with self.session() as s:
            return {lease.resource: lease.job_id for lease in s.scalars(select(Lease))}
