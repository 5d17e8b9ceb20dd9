"""The store's tables about the processes that use it, not about jobs: who holds jobs and is
still alive (``holders``, jobs/runs/heartbeat.py), and what the deployment decided (``deployment``,
jobs/scheduling/deployment.py: where jobs run).

New tables only, made by ``create_all`` in a database that lacks them: a store made by an older
trainyard opens unchanged, and rows of the jobs table do not change shape.
"""

from __future__ import annotations

import time

from sqlalchemy import Float, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from trainyard.jobs.store.orm import Base


class Holder(Base):
    """A manager process (a server's, a foreground CLI's) that holds jobs, and its last heartbeat.

    A job names its holder by ``owner_host`` and ``owner_pid``; a pid reused on that host by a
    later holder replaces the row (``started`` says which process it is).
    """

    __tablename__ = "holders"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    pid: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    started: Mapped[float] = mapped_column(Float)
    # The holder's own clock (time.time()): the machines sharing a store must agree on the time
    # to well within TRAINYARD_HEARTBEAT_TIMEOUT_S (NTP does).
    beat_at: Mapped[float] = mapped_column(Float, index=True)


class DeploymentSetting(Base):
    """One fact about the deployment that every process using the store must follow."""

    __tablename__ = "deployment"

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    set_by: Mapped[str | None] = mapped_column(Text, default=None)  # "HOST pid N": who recorded it
    updated_at: Mapped[float] = mapped_column(Float, default=time.time)
