"""The declarative base of every table in the job store (jobs/store/store.py, jobs/store/liveness_tables.py)."""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass
