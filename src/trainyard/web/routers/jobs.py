"""/api/jobs: any job's status, abort, delete, resume, log, and live events (Server-Sent Events)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from trainyard.core.events import EventTail
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.documents import JobDetail
from trainyard.jobs.runs import server_log
from trainyard.jobs.runs.runner import tail_text
from trainyard.jobs.views.documents import job_brief, job_detail
from trainyard.jobs.views.feed import feed
from trainyard.web import media
from trainyard.web.deps import Ctx, Hw, get_job_of_kind, get_job_to_change, wake_scheduler
from trainyard.web.schemas import inference as more
from trainyard.web.schemas import jobs as schemas

router = APIRouter(prefix="/api/jobs", tags=["jobs"])

POLL_S = 0.2  # how often a live stream looks for new events (arrival within a second)
KEEPALIVE_S = 15.0


@router.get("", response_model=schemas.JobPage)
def list_jobs(ctx: Ctx, kind: str | None = None, status: str | None = None,
              limit: int | None = Query(None, ge=1, le=1000, description="jobs per page; all if absent"),
              cursor: str | None = Query(None, description="next_cursor of the previous page"),
              updated_since: float | None = Query(None, description="only jobs changed after this "
                                                  "time (as_of of an earlier answer)")) -> schemas.JobPage:
    """Jobs, newest first: ``{"jobs": [...], "next_cursor", "as_of", "total"}`` (jobs/views/feed.py)."""
    statuses = status.split(",") if status else None
    return feed(ctx.store, kind, statuses, limit, cursor, updated_since)


@router.get("/{job_id}", response_model=schemas.AnyJobDetail)
def show_job(ctx: Ctx, job_id: str) -> JobDetail:
    return job_detail(ctx.manager, get_job_of_kind(ctx, job_id))


@router.post("/{job_id}/abort", dependencies=[Depends(wake_scheduler)], response_model=schemas.JobBrief)
async def abort_job(ctx: Ctx, job_id: str) -> schemas.JobBrief:
    get_job_to_change(ctx, job_id)
    job = await asyncio.to_thread(ctx.manager.abort, job_id)  # may wait out the grace period
    return job_brief(job)


@router.post("/{job_id}/resume", dependencies=[Depends(wake_scheduler)], response_model=schemas.JobBrief)
def resume_job(ctx: Ctx, job_id: str) -> schemas.JobBrief:
    get_job_to_change(ctx, job_id)
    return job_brief(ctx.manager.resume(job_id))


@router.delete("/{job_id}", response_model=schemas.Deleted)
async def delete_job(ctx: Ctx, job_id: str) -> schemas.Deleted:
    get_job_to_change(ctx, job_id)
    await asyncio.to_thread(ctx.manager.delete, job_id)
    return schemas.Deleted(deleted=job_id)


@router.get("/{job_id}/log", response_class=PlainTextResponse)
def job_log(ctx: Ctx, job_id: str, max_bytes: int = Query(20000, ge=0, le=2_000_000)) -> str:
    get_job_of_kind(ctx, job_id)
    folder = ctx.manager.folder(job_id)
    return (tail_text(folder.log, max_bytes) + tail_text(folder.output, max_bytes // 4)
            + server_log.tail(folder, max_bytes // 4))


@router.get("/{job_id}/hardware", response_model=more.JobHardware)
def job_hardware(ctx: Ctx, hardware: Hw, job_id: str) -> more.JobHardware:
    """Live figures while the job runs: each GPU it holds (NVML) and its processes' CPU and memory.

    Also carries the job's status, so a page that polls this every second or two needs nothing else.
    """
    return hardware.job(get_job_of_kind(ctx, job_id))


@router.get("/{job_id}/events", **media.EVENT_STREAM)
async def job_events(ctx: Ctx, request: Request, job_id: str,
                     last_event_id: str | None = Header(None),
                     after: int | None = Query(None, description="resume after this event id")):
    """Every event of the job as SSE, then new ones as they are written; ends with ``end``.

    A client that reconnects with Last-Event-ID (browsers do this by themselves) gets exactly the
    events after that one.
    """
    get_job_of_kind(ctx, job_id)
    # A browser reconnects to the same URL (with its ``after``) and adds Last-Event-ID: the later
    # of the two wins, so nothing is sent twice.
    seen = _event_id(last_event_id)
    start = max(seen, after if after is not None else -1)
    tail = EventTail(ctx.manager.folder(job_id).events, start_id=start + 1)
    return StreamingResponse(_stream(ctx, request, job_id, tail), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _event_id(header: str | None) -> int:
    """Last-Event-ID as an event number; anything else (text, 5,000 digits) starts from the top.

    A header is the client's, never trusted: int() of more than 4,300 digits raises ValueError.
    """
    text = (header or "").strip()
    return int(text) if text.isdigit() and len(text) <= 18 else -1


async def _stream(ctx: Context, request: Request, job_id: str, tail: EventTail) -> AsyncIterator[str]:
    idle = 0.0
    while True:
        # Status first, events second: a job seen as ended has written all its events by then.
        job = await asyncio.to_thread(ctx.store.get_job, job_id)
        # Read and format off the event loop: replaying a long run's history is megabytes.
        events = await asyncio.to_thread(_read_formatted, tail)
        if events:
            yield events
        if job is None or (job.status.is_final and not events):
            status = job.status if job else "deleted"
            yield f"event: end\ndata: {json.dumps({'status': status})}\n\n"
            return
        if await request.is_disconnected():
            return
        idle = 0.0 if events else idle + POLL_S
        if idle >= KEEPALIVE_S:
            idle = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_S)


def _read_formatted(tail: EventTail) -> str:
    """New events as one SSE chunk (one write per poll, not one per event)."""
    return "".join(f"id: {event_id}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"
                   for event_id, event in tail.read_new())
