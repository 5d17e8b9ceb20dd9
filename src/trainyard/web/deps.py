"""Typed FastAPI dependencies: the shared context, the hardware sampler, a job by id and kind."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from trainyard.core.errors import NotFound
from trainyard.jobs.context import Context
from trainyard.jobs.hardware import Hardware
from trainyard.jobs.store import Job


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
    job = ctx.store.get_job(job_id)
    if job is None or (kind and job.kind != kind):
        raise NotFound(f"no {kind or 'job'} with id {job_id!r}")
    return job


def wake_scheduler(request: Request) -> None:
    scheduler = getattr(request.app.state, "scheduler", None)
    if scheduler is not None:
        scheduler.wake()
