"""Who is acting in this context, and what that user may see and change of jobs.

The web app sets the acting user for each request (web/auth.py) in a context variable, which
FastAPI carries into the threads that run the handlers. Everything below reads it: the store
stamps new jobs with their owner (`stamp`), listings add `visible_condition`, and the one
lookup of a job by id (jobs/kinds/lookup.py) answers another user's private job exactly as it
answers a job that does not exist (404): nothing says it exists. With no acting user (the CLI
on its own home, the scheduler) nothing is filtered: that is the home's admin.

The rules themselves (admin, member, viewer; private and team) are core/ownership.py's, which
the weights store's accounts ask too; this module applies them to the acting user and to jobs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import ColumnElement, or_

from trainyard.core import ownership
from trainyard.core.errors import Forbidden
from trainyard.core.ownership import Actor, checked_visibility

_ACTOR: ContextVar[Actor | None] = ContextVar("trainyard_actor", default=None)
_VISIBILITY: ContextVar[str] = ContextVar("trainyard_new_visibility", default="private")


def current() -> Actor | None:
    """The acting user; None: the home's own process (the CLI, the scheduler), unrestricted."""
    return _ACTOR.get()


def act_as(actor: Actor | None) -> None:
    """Make ``actor`` the acting user from now on in this context (a CLI command's whole run)."""
    _ACTOR.set(actor)


@contextmanager
def acting(actor: Actor | None) -> Iterator[None]:
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


@contextmanager
def creating_with(visibility: str | None) -> Iterator[None]:
    """Jobs created inside are made with ``visibility`` (default private)."""
    token = _VISIBILITY.set(checked_visibility(visibility or "private"))
    try:
        yield
    finally:
        _VISIBILITY.reset(token)


def may_see(job: Any) -> bool:
    return ownership.sees(current(), job.visibility, [job.owner])


def may_change(job: Any) -> bool:
    return ownership.changes(current(), job.owner)


def check_change(job: Any) -> None:
    """Forbidden (403) when the actor sees ``job`` but may not change it (call after `may_see`)."""
    if not may_change(job):
        raise Forbidden(f"only the owner of job {job.id} or an admin can change it")


def check_create() -> None:
    actor = current()
    if actor is not None and actor.role == "viewer":
        raise Forbidden(f"{actor.name} is a viewer: viewers read team items and create nothing")


def visible_condition(columns: Any) -> ColumnElement[bool] | None:
    """A WHERE condition on the jobs table's ``columns`` keeping what the actor may see; None: all.
    The SQL form of core/ownership.py `sees` for one holder, the job's owner."""
    actor = current()
    if actor is None or actor.is_admin:
        return None
    team = columns.visibility == "team"
    if actor.role == "viewer":
        return team
    return or_(team, columns.owner == actor.name)


def stamp(job: Any) -> None:
    """Give a new job its owner and visibility (the acting user's; a job the CLI makes: no owner
    until the first admin adopts ownerless jobs, jobs/accounts/users.py `bootstrap`)."""
    check_create()
    actor = current()
    if job.owner is None and actor is not None:
        job.owner = actor.name
    if job.visibility is None:
        job.visibility = _VISIBILITY.get()


def creation_entry(job: Any) -> Any:
    """The audit entry of a new job (an imported model's says so)."""
    from trainyard.jobs.store.account_tables import AuditRow

    actor = current()
    action = "import" if (job.summary or {}).get("imported") else "create"
    return AuditRow(user=actor.name if actor else None, action=f"{action} {job.kind}", target=job.id,
                    time=job.created_at or time.time(), source=actor.source if actor else None)


def only_visible(query: Any, columns: Any) -> Any:
    """``query`` (a SELECT of jobs) keeping only what the actor may see."""
    condition = visible_condition(columns)
    return query if condition is None else query.where(condition)
