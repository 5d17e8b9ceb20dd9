"""Typed FastAPI dependencies: the shared context, the hardware sampler, a job by id and kind."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from trainyard.jobs.context import Context
from trainyard.jobs.kinds.lookup import job_of_kind
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.hardware import Hardware


def get_context(request: Request) -> Context:
    return request.app.state.ctx


Ctx = Annotated[Context, Depends(get_context)]


def get_hardware(request: Request) -> Hardware:
    """The app's hardware sampler, made on first use (tests may set app.state.hardware first)."""
    state = request.app.state
    if getattr(state, "hardware", None) is None:
        state.hardware = Hardware()
    return state.hardware


Hw = Annotated[Hardware, Depends(get_hardware)]


def get_job_of_kind(ctx: Context, job_id: str, kind: str | None = None) -> Job:
    """The job of that kind, or a 404 (jobs/kinds/lookup.py): another user's private job is
    a 404 too (jobs/store/actor.py)."""
    return job_of_kind(ctx.store, job_id, kind)


def get_job_to_change(ctx: Context, job_id: str) -> Job:
    """`get_job_of_kind`, for abort, resume, delete and patch: a job the user sees but does not
    own (a team job of another member's) is a 403."""
    job = job_of_kind(ctx.store, job_id)
    accounts.check_change(job)
    return job


def wake_scheduler(request: Request) -> None:
    scheduler = getattr(request.app.state, "scheduler", None)
    if scheduler is not None:
        scheduler.wake()
