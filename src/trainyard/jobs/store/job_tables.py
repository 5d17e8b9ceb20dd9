"""The tables of jobs in the job store: a job's row, its status history, deletions (the
listings' change mark), its labels and the resource leases. Store (store.py) reads and
writes them; every blob lives in the job's folder, not here."""

from __future__ import annotations

import time

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy import Enum as SAEnum
from sqlalchemy.orm import Mapped, mapped_column, validates

from trainyard.core.status import Status
from trainyard.jobs.store.orm import Base

STATUS_VALUES = frozenset(s.value for s in Status)


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
    # Text, not String(N): PostgreSQL enforces a length where SQLite never did, and names are free.
    name: Mapped[str] = mapped_column(Text)
    status: Mapped[Status] = mapped_column(_status_column(), index=True, default=Status.QUEUED)
    status_detail: Mapped[str | None] = mapped_column(Text, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    parent_id: Mapped[str | None] = mapped_column(String(40), index=True, default=None)
    group: Mapped[str | None] = mapped_column(Text, default=None)
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
    # Its machine: servers on several machines may share a PostgreSQL store, and a pid means
    # something only on its own machine. None: this machine (rows from before it was recorded).
    owner_host: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[float] = mapped_column(Float, default=time.time, index=True)
    started_at: Mapped[float | None] = mapped_column(Float, default=None)
    finished_at: Mapped[float | None] = mapped_column(Float, default=None)
    # Set on every write: listings refresh only what changed since their last look.
    updated_at: Mapped[float | None] = mapped_column(Float, default=time.time, index=True)
    # The user who made it, and who else sees it ("private" | "team"; jobs/store/actor.py).
    # None in rows from before accounts: the first admin's, private (jobs/accounts/users.py).
    owner: Mapped[str | None] = mapped_column(String(40), default=None, index=True)
    visibility: Mapped[str | None] = mapped_column(String(10), default=None)
    # Bytes of its folder, measured once when it ended (a user's disk quota sums these,
    # jobs/scheduling/quotas.py); None: not measured yet.
    disk_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)

    @validates("status")
    def _typed_status(self, key: str, value: Status | str) -> Status:
        # Events files carry plain strings; a Job holds a Status however it was set.
        return Status(value)


def launched(job: Job) -> bool:
    """Has the job's process started? A cluster job's launcher runs while the job waits for
    the cluster (status waiting, with its pid), so ``waiting`` alone does not tell."""
    return job.status == Status.RUNNING or (job.status == Status.WAITING and job.pid is not None)


class StatusChange(Base):
    __tablename__ = "status_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    status: Mapped[Status] = mapped_column(_status_column())
    detail: Mapped[str | None] = mapped_column(Text, default=None)
    time: Mapped[float] = mapped_column(Float, default=time.time)


class Deletion(Base):
    """One deleted job: the listings' change mark counts these instead of the jobs, which keeps
    an idle refresh's cost flat in the number of jobs (jobs/views/listing_query.py `version`)."""

    __tablename__ = "job_deletions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(40))
    time: Mapped[float] = mapped_column(Float, default=time.time)


class JobLabel(Base):
    """A job's tags and notes (jobs/store/labels.py): a table of their own, written by people, never by
    the job's watcher, so a user's edit and the watcher's progress writes never overwrite each other."""

    __tablename__ = "job_labels"

    job_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # ",tag1,tag2," (sorted): a tag filter is one LIKE on both databases, no JSON operators.
    tags: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")


class Lease(Base):
    """One leased resource (``gpu:0``, ``dataset:1``, ...). The primary key forbids double leases."""

    __tablename__ = "leases"

    resource: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(40), index=True)
    acquired_at: Mapped[float] = mapped_column(Float, default=time.time)
    # The manager process that holds the lease, and when that process started (a reused pid is
    # not the holder): any manager reclaims a lease whose holder is gone (jobs/scheduling/leases.py).
    holder_pid: Mapped[int | None] = mapped_column(Integer, default=None)
    holder_started: Mapped[float | None] = mapped_column(Float, default=None)
