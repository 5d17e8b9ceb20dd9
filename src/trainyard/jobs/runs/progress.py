"""Folding a running job's new events into its row: progress, ETA, the summary a listing shows,
and the live status its own process reports (a cluster launcher waits for Ray to place it)."""

from __future__ import annotations

from trainyard.core.events import EventTail
from trainyard.core.status import Status
from trainyard.jobs.store.store import Job, Store

# What a running job's own events may set: a cluster launcher waits for Ray to place its ranks.
LIVE_STATUSES = (Status.WAITING, Status.RUNNING)


def fold_events(store: Store, job: Job, tail: EventTail) -> None:
    """Read what ``tail`` has new for ``job`` and write what changed to its row."""
    progress, eta, summary = None, job.eta, dict(job.summary)
    live = None
    for _, event in tail.read_new():
        if event["type"] == "status" and event.get("status") in LIVE_STATUSES:
            if event.get("time", 0) >= (job.started_at or 0) - 1:  # not a replay of an earlier run
                live = (event["status"], event.get("detail"))
        elif event["type"] == "progress" and event.get("total"):
            progress = min(1.0, event["done"] / event["total"])
            eta = event.get("eta")
        elif event["type"] in ("summary", "result"):
            summary.update({k: v for k, v in event.items() if k not in ("type", "time")})
    if live is not None and live != (job.status, job.status_detail):
        store.update_job(job.id, status=live[0], status_detail=live[1])
    if progress is not None or summary != job.summary:
        store.update_job(job.id, progress=progress if progress is not None else job.progress,
                         eta=eta, summary=summary)
