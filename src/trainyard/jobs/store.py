"""The job store: jobs, their status history and resource leases, in SQLAlchemy.

SQLite (WAL mode) by default; a PostgreSQL URL works too. The database indexes jobs; every blob
(specs, events, checkpoints, images) lives in the job's folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import (
    JSON,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    create_engine,
    delete,
    event,
    select,
)
from sqlalchemy import (
    Enum as SAEnum,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker, validates

from trainyard.core.status import Status
from trainyard.jobs.schema_upgrade import add_missing_columns

STATUS_VALUES = frozenset(s.value for s in Status)


class Base(DeclarativeBase):
    pass


def _status_column() -> SAEnum:
    """A Status stored as its value ('queued', ...) in a VARCHAR(20), as before it was typed,
    so existing SQLite and PostgreSQL databases read unchanged (no native enum, no constraint)."""
    return SAEnum(Status, native_enum=False, create_constraint=False, length=20,
                  values_callable=lambda statuses: [s.value for s in statuses], validate_strings=True)


class Job(Base):
    __tablename__ = "jobs"
    # A listing of one kind, newest first (the home page's tables), reads this index in order.
    __table_args__ = (Index("ix_jobs_kind_created", "kind", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), index=True)
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[Status] = mapped_column(_status_column(), index=True, default=Status.QUEUED)
    status_detail: Mapped[str | None] = mapped_column(Text, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    parent_id: Mapped[str | None] = mapped_column(String(40), index=True, default=None)
    group: Mapped[str | None] = mapped_column(String(200), default=None)
    # What the job needs to run, e.g. {"pool": "gpu", "count": 2} or {"pool": "gpu", "ids": [0]}.
    needs: Mapped[dict] = mapped_column(JSON, default=dict)
    # Small facts for listings, kept current by whoever watches the job (progress, best, ...).
    summary: Mapped[dict] = mapped_column(JSON, default=dict)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    eta: Mapped[float | None] = mapped_column(Float, default=None)
    pid: Mapped[int | None] = mapped_column(Integer, default=None)
    abort_requested: Mapped[bool] = mapped_column(default=False)
    # The process responsible for watching the job: the server, or a foreground CLI.
    owner_pid: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[float] = mapped_column(Float, default=time.time, index=True)
    started_at: Mapped[float | None] = mapped_column(Float, default=None)
    finished_at: Mapped[float | None] = mapped_column(Float, default=None)
    # Set on every write: listings refresh only what changed since their last look.
    updated_at: Mapped[float | None] = mapped_column(Float, default=time.time, index=True)

    @validates("status")
    def _typed_status(self, key: str, value: Status | str) -> Status:
        # Events files carry plain strings; a Job holds a Status however it was set.
        return Status(value)


class StatusChange(Base):
    __tablename__ = "status_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    status: Mapped[Status] = mapped_column(_status_column())
    detail: Mapped[str | None] = mapped_column(Text, default=None)
    time: Mapped[float] = mapped_column(Float, default=time.time)


class Lease(Base):
    """One leased resource (``gpu:0``, ``dataset:1``, ...). The primary key forbids double leases."""

    __tablename__ = "leases"

    resource: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(40), index=True)
    acquired_at: Mapped[float] = mapped_column(Float, default=time.time)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")  # the CLI and the server share the file
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Store:
    """Every read and write of the database goes through here."""

    def __init__(self, url: str):
        is_sqlite = url.startswith("sqlite")
        self.engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30} if is_sqlite else {}
        )
        if is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
        Base.metadata.create_all(self.engine)
        # Databases made before a column existed gain it here (create_all never alters a table).
        add_missing_columns(self.engine, Base.metadata.tables[Job.__tablename__])
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    # -- jobs --------------------------------------------------------------------------------
    def add_job(self, job: Job) -> Job:
        with self.session.begin() as s:
            s.add(job)
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

    def history(self, job_id: str) -> list[StatusChange]:
        query = select(StatusChange).where(StatusChange.job_id == job_id).order_by(StatusChange.id)
        with self.session() as s:
            return list(s.scalars(query))

    def delete_job(self, job_id: str) -> None:
        with self.session.begin() as s:
            s.execute(delete(StatusChange).where(StatusChange.job_id == job_id))
            s.execute(delete(Lease).where(Lease.job_id == job_id))
            s.execute(delete(Job).where(Job.id == job_id))

    # -- leases ------------------------------------------------------------------------------
    def try_lease(self, job_id: str, resources: list[str]) -> bool:
        """Lease all of ``resources`` to the job in one transaction, or none of them."""
        try:
            with self.session.begin() as s:
                for resource in resources:
                    s.add(Lease(resource=resource, job_id=job_id))
            return True
        except IntegrityError:
            return False

    def release(self, job_id: str) -> None:
        with self.session.begin() as s:
            s.execute(delete(Lease).where(Lease.job_id == job_id))

    def leases(self) -> dict[str, str]:
        """Map of leased resource -> job id."""
        with self.session() as s:
            return {lease.resource: lease.job_id for lease in s.scalars(select(Lease))}
