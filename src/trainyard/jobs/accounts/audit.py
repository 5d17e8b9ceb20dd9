"""The audit log: who did what, to which item, when and from where; only ever appended to.

Written by the web app after each change it made (web/audit_trail.py), by the store when a job
is created (jobs/store/store.py), at sign-in (web/routers/pages.py) and by ``trainyard users``;
read by admins (``GET /api/audit``, ``trainyard audit``), newest first.
"""

from __future__ import annotations

import time

from sqlalchemy import select

from trainyard.core.document import Document
from trainyard.jobs.store.account_tables import AuditRow

MAX_TARGET = 200  # a target is an id or a name: a longer one is cut, never refused


class AuditEntry(Document):
    id: int
    user: str | None
    action: str
    target: str | None
    time: float
    source: str | None


class AuditPage(Document):
    entries: list[AuditEntry]


def record(store, user: str | None, action: str, target: str | None = None, source: str | None = None) -> None:
    """Append one entry (``user`` None: the home's own CLI)."""
    row = AuditRow(user=user, action=action, target=(target or None) and target[:MAX_TARGET],
                   time=time.time(), source=source)
    with store.session.begin() as s:
        s.add(row)


def entries(store, limit: int = 200, user: str | None = None) -> AuditPage:
    """The newest ``limit`` entries, newest first (of ``user`` only, when given)."""
    query = select(AuditRow).order_by(AuditRow.time.desc(), AuditRow.id.desc()).limit(limit)
    if user:
        query = query.where(AuditRow.user == user)
    with store.session() as s:
        rows = list(s.scalars(query))
    return AuditPage(entries=[AuditEntry(id=r.id, user=r.user, action=r.action, target=r.target, time=r.time,
                                         source=r.source) for r in rows])
