"""One page of a job listing, filtered, sorted, grouped and cut in SQL.

The home page shows a page of rows, not every job: filtering (name or id, status), sorting and
the page cut happen in the database, so the cost of a refresh follows the page size, not the
number of jobs. Grouping keeps what the tables did when they sorted in Python: jobs in sort
order, each group where its first job falls, its jobs together; a window function (min of the
row number over the group) gives that order in SQL, so groups stay whole across pages.

`version` is the listing's change mark (last deletion and latest ``updated_at``): a refresh that
brings the same mark changes nothing and can skip rendering altogether.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, case, func, or_, select

from trainyard.core.status import ACTIVE_STATUSES, FINAL_STATUSES, Status
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.job_tables import Deletion
from trainyard.jobs.store.labels import has_tag
from trainyard.jobs.store.store import Job, Store
from trainyard.jobs.views.documents import job_brief

JOBS = Job.__table__
# Status order for sorting: what needs attention first.
STATUS_RANK = {Status.RUNNING: 0, Status.WAITING: 1, Status.QUEUED: 2, Status.FAILED: 3, Status.ABORTED: 4,
               Status.DONE: 5}
SORTS = ("created", "name", "status", "progress", "elapsed", "best")


@dataclass
class PageQuery:
    """What a table shows: jobs of ``kind`` matching ``q`` and ``status``, in order, one page."""

    kind: str
    q: str = ""
    status: str = ""  # "", "active", "ended" or one status
    sort: str = "created"
    order: str = "desc"
    group: str = ""
    page: int = 1  # from 1
    per_page: int = 50
    tag: str = ""  # only jobs with this tag (jobs/store/labels.py)


@dataclass
class JobPage:
    jobs: list[dict] = field(default_factory=list)  # job briefs, in display order
    matched: int = 0  # jobs of the kind that match the filters, on every page
    total: int = 0  # jobs of the kind
    page: int = 1
    pages: int = 1
    per_page: int = 50


def _where(c: Any, query: PageQuery) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [c.kind == query.kind]
    visible = accounts.visible_condition(c)  # another user's private jobs are never listed
    if visible is not None:
        conditions.append(visible)
    if query.q:
        needle = query.q.lower()
        conditions.append(or_(func.lower(c.name).contains(needle, autoescape=True),
                              func.lower(c.id).contains(needle, autoescape=True)))
    if query.status == "active":
        conditions.append(c.status.in_(ACTIVE_STATUSES))
    elif query.status == "ended":
        conditions.append(c.status.in_(FINAL_STATUSES))
    elif query.status:
        conditions.append(c.status == Status(query.status))
    if query.tag:
        conditions.append(c.id.in_(has_tag(query.tag)))
    return conditions


def _sort_keys(c: Any, sort: str) -> list[Any]:
    """The sort as columns, most significant first (the tie-breaks the Python sort had)."""
    if sort == "name":
        return [func.lower(c.name), c.id]
    if sort == "status":
        rank = case(*[(c.status == Status(s), r) for s, r in STATUS_RANK.items()], else_=9)
        return [rank, -c.created_at]
    if sort == "progress":
        return [c.progress, c.created_at]
    if sort == "elapsed":
        elapsed = case((c.started_at.is_(None), 0.0),
                       else_=func.coalesce(c.finished_at, time.time()) - c.started_at)
        return [elapsed, c.created_at]
    if sort == "best":
        return [func.coalesce(c.summary["best"]["val_accuracy"].as_float(),
                              c.summary["best"]["val_map50"].as_float(),
                              c.summary["best"]["val_micro_f1"].as_float(), -1.0), c.created_at]
    return [c.created_at, c.id]


def _group_key(c: Any, group: str) -> Any:
    if group == "status":
        return c.status
    if group == "dataset":
        return func.coalesce(c.parent_id, "")
    return func.coalesce(c.group, "")


def _count(store: Store, conditions: list[ColumnElement[bool]]) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(JOBS).where(*conditions)).scalar_one()


def job_page(store: Store, query: PageQuery) -> JobPage:
    """The page of ``query`` (the last one if it asks past the end), as job briefs."""
    conditions = _where(JOBS.c, query)
    matched = _count(store, conditions)
    total = _count(store, _where(JOBS.c, PageQuery(kind=query.kind))) if len(conditions) > 1 else matched
    pages = max(1, -(-matched // query.per_page))
    page = min(max(query.page, 1), pages)
    direction = (lambda col: col.desc()) if query.order == "desc" else (lambda col: col.asc())
    # The ids of the page first (sorting narrow rows is several times faster than sorting whole
    # ones with their JSON), then those rows.
    if query.group:
        ranked = select(JOBS.c.id, JOBS.c.group, JOBS.c.parent_id, JOBS.c.status, func.row_number().over(
            order_by=[direction(k) for k in _sort_keys(JOBS.c, query.sort)]).label("rn")
        ).where(*conditions).subquery()
        grouped = select(ranked, func.min(ranked.c.rn).over(
            partition_by=_group_key(ranked.c, query.group)).label("first")).subquery()
        statement = select(grouped.c.id).order_by(grouped.c.first, grouped.c.rn)
    else:
        statement = select(JOBS.c.id).where(*conditions).order_by(
            *[direction(k) for k in _sort_keys(JOBS.c, query.sort)])
    statement = statement.limit(query.per_page).offset((page - 1) * query.per_page)
    with store.session() as s:
        ids = list(s.scalars(statement))
        rows = {row.id: row for row in s.execute(select(JOBS).where(JOBS.c.id.in_(ids)))}
    # the table's rows: each job's brief, to which the page adds its display cells (web/listing.py)
    jobs = [job_brief(rows[i]).model_dump() for i in ids if i in rows]
    return JobPage(jobs, matched, total, page, pages, query.per_page)


def names_of(store: Store, ids: set[str]) -> dict[str, str]:
    """{id: name} of the given jobs (a page's datasets), one query."""
    if not ids:
        return {}
    with store.session() as s:
        return dict(s.execute(select(JOBS.c.id, JOBS.c.name).where(JOBS.c.id.in_(ids))).all())


def classes_of(store: Store, ids: set[str]) -> dict[str, int]:
    """{id: number of classes} of the given datasets that know theirs (a page's models' parents)."""
    if not ids:
        return {}
    with store.session() as s:
        rows = s.execute(select(JOBS.c.id, JOBS.c.summary).where(JOBS.c.id.in_(ids))).all()
    return {i: len(summary["classes"]) for i, summary in rows if isinstance(summary, dict) and summary.get("classes")}


def version(store: Store) -> str:
    """A mark that changes whenever any job is added, changed or deleted."""
    # Two index ends (the newest write, the last deletion), never a count: flat in the number of jobs.
    with store.session() as s:
        latest = s.execute(select(func.max(JOBS.c.updated_at))).scalar_one()
        deleted = s.execute(select(func.max(Deletion.id))).scalar_one()
    return f"{deleted or 0}-{latest or 0:.6f}"
