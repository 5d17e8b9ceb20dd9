"""`trainyard jobs show ID` for a person: what the job page shows, as text.

The raw document printed ``<Status.QUEUED: 'queued'>``, epoch seconds and one-line dicts; this
groups the settings under the job page's labels (jobs/views/settings.py), writes dates in local
time and spans as durations, and lists the best epoch, the snapshots and the status timeline.
"""

from __future__ import annotations

from trainyard.core.formatting import clock, duration
from trainyard.jobs.views.settings import settings_groups, timeline

WIDTH = 30  # the label column (the job page's longest labels fit)


def _row(name: str, value: object) -> str:
    return f"  {name:<{WIDTH}}  {value}"


def _word(status) -> str:
    return str(getattr(status, "value", status))


def _head(job: dict) -> list[str]:
    lines = [f"{job['kind']} {job['id']}  {job['name']}  [{_word(job['status'])}]"]
    if job.get("status_detail") and _word(job["status"]) in ("queued", "waiting"):
        lines.append(f"  {job['status_detail']}")
    if job.get("error"):
        lines.append(f"  error: {job['error']}")
    facts = [(key, job.get(key)) for key in ("network", "dataset", "task", "group")]
    facts += [("tags", ", ".join(job.get("tags") or [])), ("notes", job.get("notes"))]
    facts += [(key, clock(job.get(f"{key}_at"))) for key in ("created", "started", "finished")]
    facts.append(("ran for", duration(job["elapsed"]) if job.get("elapsed") else ""))
    return lines + [_row(key, value) for key, value in facts if value]


def _results(job: dict) -> list[str]:
    lines = []
    best = job.get("best") or {}
    metric = next((key for key in best if key != "epoch"), None)
    if metric:
        value = best[metric]
        shown = f"{value:.2f}%" if metric == "val_accuracy" else f"{value:.4f}"
        lines.append(_row(f"best {metric.replace('_', ' ')}", f"{shown} at epoch {best['epoch']:g}"))
    if job["kind"] == "model" and job.get("epoch") is not None:
        lines.append(_row("epochs trained", f"{job['epoch']:g}"))
    if job.get("snapshots"):
        lines.append(_row("snapshots (epochs)", ", ".join(f"{epoch:g}" for epoch in job["snapshots"])))
    if job.get("classes"):
        lines.append(_row(f"classes ({len(job['classes'])})", ", ".join(job["classes"])))
    for split, per_class in (job.get("counts") or {}).items():
        lines.append(_row(f"{split} images", sum(per_class.values())))
    if job.get("skipped"):
        lines.append(_row("files skipped", len(job["skipped"])))
    for finding in (job.get("summary") or {}).get("diagnosis") or []:  # training/diagnosis.py
        lines.append(_row("warning", finding))
    return lines


def _settings(job: dict) -> list[str]:
    lines = []
    for group in settings_groups(job["spec"]) if isinstance(job.get("spec"), dict) else []:
        lines += ["", group["name"], *(_row(name, value) for name, value in group["rows"])]
    return lines


def _timeline(job: dict) -> list[str]:
    rows = timeline(job.get("history") or [], job.get("finished_at"), status=_word(job["status"]))
    lines = ["", "Timeline"] if rows else []
    for row in rows:
        spent = duration(row["duration"]) if row["duration"] is not None else ""
        detail = f"  {row['detail']}" if row.get("detail") else ""
        lines.append(f"  {clock(row['time'])}  {_word(row['status']):<9}{spent:>8}{detail}")
    return lines


def job_text(job: dict) -> str:
    """The job document's JSON (jobs/views/documents.job_detail, as the API serves it) as lines for a terminal."""
    return "\n".join([*_head(job), *_results(job), *_settings(job), *_timeline(job)])
