"""The accounts' tables in the job store: users, their personal API tokens, the audit log.

New tables only (``create_all`` makes them in a store made before accounts existed), so an older
home opens unchanged; the jobs table gains nullable ``owner`` and ``visibility`` columns
(jobs/store/store.py). A token is stored as the SHA-256 of its random secret, never the secret:
the secret has 192 random bits, so a fast hash is enough (nothing to guess from a dictionary).
"""

from __future__ import annotations

import time

from sqlalchemy import BigInteger, Boolean, Float, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from trainyard.jobs.store.orm import Base


class UserRow(Base):
    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    role: Mapped[str] = mapped_column(String(10))  # admin | member | viewer (users.ROLES)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    password_hash: Mapped[str | None] = mapped_column(Text, default=None)  # argon2; None: tokens only
    max_jobs: Mapped[int | None] = mapped_column(Integer, default=None)  # None: TRAINYARD_USER_MAX_JOBS
    # The other quotas (jobs/scheduling/quotas.py); None: the server's TRAINYARD_USER_MAX_* default.
    max_gpus: Mapped[int | None] = mapped_column(Integer, default=None)
    max_cpu_slots: Mapped[int | None] = mapped_column(Integer, default=None)
    max_disk_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class TokenRow(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user: Mapped[str] = mapped_column(String(40), index=True)
    name: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the secret
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class AuditRow(Base):
    """One entry of the audit log: only ever inserted (jobs/accounts/audit.py)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user: Mapped[str | None] = mapped_column(String(40), default=None)
    action: Mapped[str] = mapped_column(String(40))
    target: Mapped[str | None] = mapped_column(Text, default=None)
    time: Mapped[float] = mapped_column(Float, default=time.time, index=True)
    source: Mapped[str | None] = mapped_column(Text, default=None)  # the client's address
