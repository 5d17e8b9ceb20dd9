"""Several training runs side by side: the document behind ``jobs compare``, its API and page.

A ``Comparison`` (jobs/views/run_documents.py): each run (id, name, status, settings, best, final,
tags, notes), the names of the settings that differ, and each run's curves. Settings are each run's spec flattened to
dotted names (``lr.base_lr``), without what only locates files; ``differs`` names those whose
values are not the same in every run (a setting one run lacks differs too), in sorted order.
"""

from __future__ import annotations

import hashlib

from trainyard.core.vocabulary import BEST_METRIC, DEFAULT_TASK, best_score
from trainyard.jobs.kinds.registry import MODEL, model_metrics
from trainyard.jobs.runs.manager import JobError, JobManager, JobNotFound
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.labels import Labels, labels_of
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.run_documents import ComparedRun, Comparison

MAX_RUNS = 20  # more curves than this on one chart are not readable, and each costs a file read
SERIES = ("train_loss", "val_loss", "val_accuracy", "val_map50", "val_map", "val_micro_f1", "lr")
# Spec fields that say where things are or who the job is, not how it trained.
NOT_SETTINGS = frozenset({"id", "name", "dataset_dir", "pretrained", "cluster"})


def parse_ids(text: str | list[str] | None) -> list[str]:
    """Job ids from "A,B" (or a list of such), in order, each once; a one-line error if none or too many."""
    parts = text if isinstance(text, list) else [text or ""]
    ids = list(dict.fromkeys(i.strip() for part in parts for i in part.split(",") if i.strip()))
    if not ids:
        raise JobError("name at least one model job to compare, e.g. ids=A,B")
    if len(ids) > MAX_RUNS:
        raise JobError(f"{len(ids)} runs asked for; compare at most {MAX_RUNS} at once")
    return ids


def compare(manager: JobManager, ids: list[str]) -> Comparison:
    """The compare document for model jobs ``ids`` (see the module docstring)."""
    jobs = [_model_job(manager, job_id) for job_id in ids]
    labels = labels_of(manager.store, ids)
    runs, series = [], {}
    for job in jobs:
        run, curves = _run(manager, job, labels[job.id])
        runs.append(run)
        series[job.id] = curves
    return Comparison(jobs=runs, differs=differing([r.settings for r in runs]), series=series)


def _model_job(manager: JobManager, job_id: str) -> Job:
    job = manager.store.get_job(job_id)
    if job is None or not accounts.may_see(job):
        raise JobNotFound(f"no job with id {job_id!r}")
    if job.kind != "model":
        raise JobError(f"{job_id} is a {job.kind} job; only model (training) jobs can be compared")
    return job


def _run(manager: JobManager, job: Job, labels: Labels) -> tuple[ComparedRun, dict]:
    folder = manager.folder(job.id)
    metrics, _ = model_metrics(folder)
    spec = MODEL.find_spec(folder)
    key = BEST_METRIC[spec.task if spec else DEFAULT_TASK]
    accuracy = metrics.get(key) or []
    best = max(accuracy, key=lambda p: p[1]) if accuracy else None
    final = {name: points[-1][1] for name in SERIES if (points := metrics.get(name))}
    epochs = [points[-1][0] for points in metrics.values() if points]
    if final:
        final["epoch"] = max(epochs)
    run = ComparedRun(id=job.id, name=job.name, status=job.status, group=job.group,
                      # As the spec was written (exclude_unset): a setting a job never had is not made up.
                      settings=flat_settings(spec.model_dump(mode="json", exclude_unset=True) if spec else {}),
                      best={"epoch": best[0], key: best[1]} if best else None, final=final or None,
                      tags=labels.tags, notes=labels.notes)
    return run, {name: metrics.get(name, []) for name in SERIES}


def flat_settings(spec: dict, prefix: str = "") -> dict:
    """A spec as {dotted name: value}; a custom network's source stands as a short hash of it."""
    flat: dict = {}
    for key, value in spec.items():
        if not prefix and key in NOT_SETTINGS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_settings(value, f"{name}."))
        elif key == "network_source" and isinstance(value, str):
            flat[name] = "custom " + hashlib.sha256(value.encode()).hexdigest()[:8]
        else:
            flat[name] = value
    return flat


def differing(settings: list[dict]) -> list[str]:
    """Names whose values are not the same in every one of ``settings`` (missing counts as a value)."""
    names = sorted({name for s in settings for name in s})
    return [n for n in names if len({repr(s.get(n, "<unset>")) for s in settings}) > 1]


def text_table(doc: Comparison) -> list[str]:
    """The CLI's table: one row per run, the differing settings and the metrics as columns."""
    with_notes = any(run.notes for run in doc.jobs)
    columns = ["id", *doc.differs, "status", "best acc", "at epoch", "final acc", "final loss",
               *(["notes"] if with_notes else [])]
    rows = []
    for run in doc.jobs:
        best, final = run.best or {}, run.final or {}
        rows.append([run.id, *(_cell(run.settings.get(n)) for n in doc.differs), run.status.value,
                     _cell(best_score(best)), _cell(best.get("epoch")),
                     _cell(final.get("val_accuracy", final.get("val_map50", final.get("val_micro_f1")))),
                     _cell(final.get("train_loss")),
                     *([_clipped(run.notes)] if with_notes else [])])
    widths = [max(len(str(c)) for c in col) for col in zip(columns, *rows)]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [columns, *rows]]


def _clipped(notes: str, width: int = 40) -> str:
    line = " ".join(notes.split())  # one line in the table, however the notes were written
    return line if len(line) <= width else line[:width - 1] + "…"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
