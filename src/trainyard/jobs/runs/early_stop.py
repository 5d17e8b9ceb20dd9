"""Early stopping across a sweep: asynchronous successive halving over the runs' validations.

A sweep made with ``early_stop`` marks each of its jobs (``summary.early_stop``: jobs/kinds/sweeps.py). Whenever such a
run reports a validation accuracy, the manager that watches it asks Optuna's
``SuccessiveHalvingPruner`` whether the run is among the worst of the runs that reached that
validation point; if so the run is stopped through the abort path that every kind of job
shares (local, GPU, cluster), and ends ``done`` with "stopped early at epoch E: bottom of N at
this point". Its checkpoints stay; ``jobs resume`` continues it by hand, to the end.

The pruner's study is rebuilt each time from what the jobs recorded (their ``val_accuracy``
events, replayed in the order they were written): any manager, a restarted server or a CLI
running the sweep one job after another, takes the same decision, and no study is stored.
Steps are validation points (the first, second, ... validation of a run). Successive halving
promotes the best run at every rung, so the best run is never stopped.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from trainyard.core.events import EventTail, read_events
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.core.vocabulary import BEST_METRIC
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.kinds.sweeps import DEFAULT_MIN_EPOCHS
from trainyard.jobs.runs import server_log
from trainyard.jobs.store.store import Job, Store

REDUCTION_FACTOR = 2  # a run goes on at a rung if it is in the best half of the runs that got there
MIN_RESOURCE = 1  # validation points before the first rung


def validation_points(events_path) -> list[tuple[float, float, float]]:
    """(time, epoch, value) of each validation accuracy of a run, in the order written; a
    resumed run that reported an epoch again keeps the later value."""
    points: dict[float, tuple[float, float, float]] = {}
    for event in read_events(events_path, {"metric"}):
        if event.get("name") in BEST_METRIC.values():  # accuracy, or a detector's mAP@0.5
            points[event["epoch"]] = (event.get("time", 0.0), event["epoch"], event["value"])
    return sorted(points.values(), key=lambda p: p[1])


def decide(runs: dict[str, list[tuple[float, float, float]]], job_id: str, min_epochs: float = 0.0) -> dict | None:
    """Whether ``job_id`` stops now, at its latest validation point, from every run's points.

    Only points at ``min_epochs`` or later count (the grace period): the first rung is a run's
    first validation from then on.

    Replays all points in time order through an in-memory Optuna study (one trial per run). The
    run stops if it was pruned at any of its points: a watcher that looks late (a loaded machine,
    a fast run) may first see the run a point or two past the rung that judged it, where the
    pruner, asked afresh, has nothing to say. None: it goes on; else ``{"epoch"`` (its latest),
    ``"judged_at"`` (the epoch of the rung that judged it), ``"point", "rank", "of"}`` (rank 1
    is the best of ``of`` runs that reached that point).
    """
    import optuna  # here: only the watcher of an early-stopped sweep pays for it

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=MIN_RESOURCE, reduction_factor=REDUCTION_FACTOR)
    study = optuna.create_study(direction="maximize", pruner=pruner)
    trials = {run: study.ask() for run in runs}
    judged = {run: [p for p in points if p[1] >= min_epochs - 1e-9] for run, points in runs.items()}
    if not judged.get(job_id):
        return None  # still in its grace period
    timeline = sorted((t, run, step, epoch, value) for run, points in judged.items()
                      for step, (t, epoch, value) in enumerate(points, 1))
    reached: dict[int, list[float]] = {}
    verdict = None
    for _, run, step, epoch, value in timeline:
        trials[run].report(value, step)
        reached.setdefault(step, []).append(value)
        if trials[run].should_prune() and run == job_id and verdict is None:
            others = reached[step]
            verdict = {"judged_at": epoch, "point": step, "of": len(others),
                       "rank": 1 + sum(v > value for v in others)}
    if verdict is not None:
        verdict["epoch"] = runs[job_id][-1][1]
    return verdict


def message(verdict: dict) -> str:
    judged = verdict.get("judged_at", verdict["epoch"])
    where = "this point" if judged == verdict["epoch"] else f"epoch {judged:g}"
    return f"stopped early at epoch {verdict['epoch']:g}: bottom of {verdict['of']} at {where}"


class EarlyStopper:
    """The manager's part: judge the runs it watches, and say how a stopped one ended. It owns
    what it has read of each watched run's events; the jobs are read from ``store`` and their
    folders found by ``folder`` (the manager's)."""

    def __init__(self, store: Store, folder: Callable[[str], JobFolder]):
        self.store, self.folder = store, folder
        self._tails: dict[str, EventTail] = {}  # job id -> its events read so far

    def review(self, job: Job) -> None:
        """Stop ``job`` (running, watched here) if its newest validation says it is among the worst."""
        summary = job.summary or {}
        if not summary.get("early_stop") or summary.get("stopped_early") or job.abort_requested or not job.group:
            return
        folder = self.folder(job.id)
        tail = self._tails.setdefault(job.id, EventTail(folder.events))
        if not any(e["type"] == "metric" and e.get("name") in BEST_METRIC.values() for _, e in tail.read_new()):
            return  # no new validation since the last look: nothing to judge (and no file read)
        own = validation_points(folder.events)
        if not own or _is_last(folder, own[-1][1]):
            return  # its last validation: it has finished anyway
        runs = {j.id: validation_points(self.folder(j.id).events) for j in self._siblings(job)}
        runs[job.id] = own
        verdict = decide(runs, job.id, float(summary.get("early_stop_min_epochs", DEFAULT_MIN_EPOCHS)))
        if verdict is None:
            return
        verdict.update(message=message(verdict), started_at=job.started_at)
        store = self.store
        fresh = store.get_job(job.id) or job
        # Asked like an abort: the manager's next look at the job stops it (_stop_if_asked), on
        # this machine or, for a job it cannot signal from here, on the one that started it.
        store.update_job(job.id, abort_requested=True, summary={**(fresh.summary or {}), "stopped_early": verdict})

    def _siblings(self, job: Job) -> list[Job]:
        """The other early-stopped runs of the job's sweep (its group, of its kind, on the same dataset)."""
        query = select(Job).where(Job.group == job.group, Job.kind == job.kind, Job.parent_id == job.parent_id,
                                  Job.id != job.id)
        with self.store.session() as s:
            return [j for j in s.scalars(query) if (j.summary or {}).get("early_stop")]

    def outcome(self, job: Job, status: Status, error: str | None) -> tuple[Status, str | None, str | None]:
        """(status, error, status detail) of a job that ended: a run this stopped ends ``done``
        with the message (not ``aborted``, never ``failed``); any other ending is left as it is."""
        self._tails.pop(job.id, None)
        fresh = self.store.get_job(job.id) or job
        stopped = (fresh.summary or {}).get("stopped_early")
        if stopped and stopped.get("started_at") == job.started_at and status.is_unsuccessful:
            # The job's own last line says "aborted"; its log should say why (the server's own
            # lines, jobs/runs/server_log.py; the live page shows the status detail).
            server_log.note(self.folder(job.id), f"{stopped['message']} (rank {stopped['rank']} of "
                            f"{stopped['of']}); `trainyard jobs resume {job.id}` trains it on to the end")
            return Status.DONE, None, stopped["message"]
        return status, error, None


def _is_last(folder, epoch: float) -> bool:
    spec = MODEL.find_spec(folder)
    return spec is not None and epoch >= spec.epochs - 1e-9
