"""A sweep (the model jobs of one group) as its page shows it: runs, states, the best so far,
how many early stopping stopped and when, and which runs the compare view shows; every sweep in
a line each for the list of sweeps; sweep names standing for their runs where ids are asked."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from trainyard.core.status import ACTIVE_STATUSES, Status
from trainyard.core.vocabulary import best_score
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.runs.manager import JobManager, JobNotFound
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.labels import Labels, labels_of
from trainyard.jobs.store.store import Job, Store
from trainyard.jobs.views.compare import MAX_RUNS
from trainyard.jobs.views.run_documents import BestOfSweep, NotedRun, StoppedEarly, Sweep, SweepLine, SweepRun


def sweep(manager: JobManager, group: str) -> Sweep:
    """The sweep's runs, their counts by status, the best, what early stopping stopped and saved,
    and the runs its compare view shows; JobNotFound when no model job is in the group."""
    query = accounts.only_visible(select(Job).where(Job.group == group, Job.kind == "model")
                                  .order_by(Job.created_at, Job.id), Job)
    with manager.store.session() as s:
        jobs = list(s.scalars(query))
    if not jobs:
        raise JobNotFound(f"no sweep named {group!r}")
    notes = labels_of(manager.store, [j.id for j in jobs])
    runs = [_run(manager, job, notes[job.id].notes) for job in jobs]
    scored = [r for r in runs if r.best]
    best = max(scored, key=lambda r: best_score(r.best) or 0.0) if scored else None
    stopped = [r for r in runs if r.stopped]
    saved = sum(max(0.0, (r.epochs or 0) - r.stopped.epoch) for r in stopped if r.stopped)
    # The compare view takes at most MAX_RUNS: the best ones, then those with no result yet.
    ranked = sorted(runs, key=lambda r: -(best_score(r.best) or -1.0))
    return Sweep(name=group, runs=runs, counts=dict(Counter(r.status.value for r in runs)), best=best,
                 stopped=len(stopped), epochs_saved=saved,
                 early_stop=any((j.summary or {}).get("early_stop") for j in jobs),
                 compare_ids=[r.id for r in ranked[:MAX_RUNS]])


def _run(manager: JobManager, job: Job, notes: str) -> SweepRun:
    summary = job.summary or {}
    spec = MODEL.find_spec(manager.folder(job.id))
    stopped = summary.get("stopped_early")
    ended_stopped = stopped if stopped and job.status_detail == stopped.get("message") else None
    return SweepRun(id=job.id, name=job.name, status=job.status, epoch=summary.get("epoch", 0),
                    epochs=spec.epochs if spec else None, best=summary.get("best"),
                    stopped=StoppedEarly(epoch=ended_stopped["epoch"], message=ended_stopped["message"],
                                         at=job.finished_at) if ended_stopped else None, notes=notes,
                    diagnosis=summary.get("diagnosis") or [])


def sweeps(store: Store) -> list[SweepLine]:
    """Every sweep, newest first, a line each (its runs, counts by status, state, best and the
    runs with notes), from the store alone (no job folder is read)."""
    query = accounts.only_visible(select(Job).where(Job.group.is_not(None), Job.kind == "model")
                                  .order_by(Job.created_at, Job.id), Job)
    with store.session() as s:
        jobs = list(s.scalars(query))
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.group or "", []).append(job)
    notes = labels_of(store, [j.id for j in jobs])
    found = [_line(name, runs, notes) for name, runs in groups.items()]
    return sorted(found, key=lambda line: -line.created_at)


def _line(name: str, runs: list[Job], notes: dict[str, Labels]) -> SweepLine:
    counts = Counter(j.status.value for j in runs)
    scored = [j for j in runs if best_score((j.summary or {}).get("best")) is not None]
    top = max(scored, key=lambda j: best_score(j.summary["best"]) or 0.0) if scored else None
    return SweepLine(name=name, runs=len(runs), counts=dict(counts), status=_status(counts),
                     best=BestOfSweep(id=top.id, name=top.name, best=top.summary["best"]) if top else None,
                     created_at=min(j.created_at for j in runs),
                     notes=[NotedRun(id=j.id, name=j.name, notes=notes[j.id].notes)
                            for j in runs if notes[j.id].notes])


def _status(counts: Counter) -> str:
    """The sweep's state in one job status: the furthest along of its active runs while any is
    active, then done if any run finished, else how its runs ended (aborted or failed)."""
    for status in (*reversed(ACTIVE_STATUSES), Status.DONE):
        if counts.get(status.value):
            return status.value
    return counts.most_common(1)[0][0]


def runs_named(manager: JobManager, names: list[str]) -> list[str]:
    """Job ids for ``names``: each a job's id, or a sweep's name standing for the runs its compare
    view shows (the best MAX_RUNS); JobNotFound naming what is neither."""
    ids: list[str] = []
    for name in names:
        if manager.store.get_job(name) is not None:
            ids.append(name)
            continue
        try:
            ids += sweep(manager, name).compare_ids
        except JobNotFound:
            raise JobNotFound(f"no job with id {name!r} and no sweep of that name") from None
    return ids
