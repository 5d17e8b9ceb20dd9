"""The declarative base of every table in the job store (jobs/store/job_tables.py, liveness_tables.py, ...)."""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass
