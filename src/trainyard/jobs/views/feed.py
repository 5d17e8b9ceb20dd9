"""`GET /api/jobs` in pages: newest first, a ``cursor`` to the next page, ``updated_since`` deltas.

The cursor names the last job of a page (its ``created_at`` and id), so the next page starts
right after it through the ``created_at`` index (keyset pagination: no OFFSET that grows with the
page number, and no job skipped or repeated when new jobs arrive meanwhile). ``as_of`` is the
latest ``updated_at`` at answer time: passed back as ``updated_since``, it returns only the jobs
added or changed since. Deleted jobs do not appear in a delta; ``total`` (jobs matching the kind
and status filters) tells a client that some went away.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import and_, func, or_, select

from trainyard.core.errors import InvalidInput
from trainyard.core.status import Status
from trainyard.jobs.kinds.documents import JobPage
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.job_tables import STATUS_VALUES
from trainyard.jobs.store.store import Job, Store
from trainyard.jobs.views.documents import job_brief

JOBS = Job.__table__


def parse_cursor(cursor: str) -> tuple[float, str]:
    created, _, job_id = cursor.partition("~")
    try:
        return float(created), job_id
    except ValueError:
        raise InvalidInput(f"cursor {cursor!r} is not one this API gave out (use next_cursor)") from None


def feed(store: Store, kind: str | None = None, statuses: Iterable[str] | None = None,
         limit: int | None = None, cursor: str | None = None,
         updated_since: float | None = None) -> JobPage:
    """A page of job briefs with its ``next_cursor``, ``as_of`` and ``total``; without ``limit``,
    every job (one page)."""
    conditions = []
    visible = accounts.visible_condition(JOBS.c)  # another user's private jobs are never listed
    if visible is not None:
        conditions.append(visible)
    if kind:
        conditions.append(JOBS.c.kind == kind)
    if statuses is not None:
        # An unknown name matches no job, as in Store.list_jobs.
        conditions.append(JOBS.c.status.in_([Status(s) for s in statuses if s in STATUS_VALUES]))
    page = list(conditions)
    if updated_since is not None:
        page.append(JOBS.c.updated_at > updated_since)
    if cursor:
        created, job_id = parse_cursor(cursor)
        page.append(or_(JOBS.c.created_at < created,
                        and_(JOBS.c.created_at == created, JOBS.c.id < job_id)))
    statement = select(JOBS).where(*page).order_by(JOBS.c.created_at.desc(), JOBS.c.id.desc())
    if limit is not None:
        statement = statement.limit(limit + 1)  # one more says whether a next page exists
    with store.session() as s:
        as_of = s.execute(select(func.max(JOBS.c.updated_at))).scalar_one()
        rows = list(s.execute(statement))
        total = s.execute(select(func.count()).select_from(JOBS).where(*conditions)).scalar_one()
    more = limit is not None and len(rows) > limit
    rows = rows[:limit] if limit is not None else rows
    next_cursor = f"{rows[-1].created_at!r}~{rows[-1].id}" if more else None
    return JobPage(jobs=[job_brief(r) for r in rows], next_cursor=next_cursor, as_of=as_of or 0.0, total=total)
