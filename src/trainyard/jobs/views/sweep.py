"""A sweep (the model jobs of one group) as its page shows it: runs, states, the best so far,
how many early stopping stopped and when, and which runs the compare view shows."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from trainyard.core.vocabulary import best_score
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.runs.manager import JobManager, JobNotFound
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.compare import MAX_RUNS


def sweep(manager: JobManager, group: str) -> dict:
    """``{"name", "runs": [...], "counts": {status: n}, "best", "stopped", "epochs_saved",
    "early_stop", "compare_ids"}``; JobNotFound when no model job is in the group."""
    query = select(Job).where(Job.group == group, Job.kind == "model").order_by(Job.created_at, Job.id)
    with manager.store.session() as s:
        jobs = list(s.scalars(query))
    if not jobs:
        raise JobNotFound(f"no sweep named {group!r}")
    runs = [_run(manager, job) for job in jobs]
    scored = [r for r in runs if r["best"]]
    best = max(scored, key=lambda r: best_score(r["best"]) or 0.0) if scored else None
    stopped = [r for r in runs if r["stopped"]]
    saved = sum(max(0.0, (r["epochs"] or 0) - r["stopped"]["epoch"]) for r in stopped)
    # The compare view takes at most MAX_RUNS: the best ones, then those with no result yet.
    ranked = sorted(runs, key=lambda r: -(best_score(r["best"]) or -1.0))
    return {"name": group, "runs": runs, "counts": dict(Counter(r["status"] for r in runs)), "best": best,
            "stopped": len(stopped), "epochs_saved": saved,
            "early_stop": any((j.summary or {}).get("early_stop") for j in jobs),
            "compare_ids": [r["id"] for r in ranked[:MAX_RUNS]]}


def _run(manager: JobManager, job: Job) -> dict:
    summary = job.summary or {}
    spec = MODEL.find_spec(manager.folder(job.id))
    epochs = spec.epochs if spec else None
    stopped = summary.get("stopped_early")
    ended_stopped = stopped if stopped and job.status_detail == stopped.get("message") else None
    return {"id": job.id, "name": job.name, "status": job.status.value, "epoch": summary.get("epoch", 0),
            "epochs": epochs, "best": summary.get("best"),
            "stopped": {"epoch": ended_stopped["epoch"], "message": ended_stopped["message"],
                        "at": job.finished_at} if ended_stopped else None}
