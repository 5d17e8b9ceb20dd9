"""The home page's job tables: filter, sort and group job briefs (from the database alone).

Everything here works on `job_brief` dicts, which need no file reads, so the page stays fast with
thousands of jobs. The same query (``q``, ``status``, ``sort``, ``order``, ``group``) drives the
first render and every htmx refresh, so a refresh never undoes what the user chose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from trainyard.core import formatting
from trainyard.core.status import Status

ACTIVE = ("queued", "waiting", "running")
ENDED = ("done", "aborted", "failed")
# Status order for sorting: what needs attention first.
STATUS_RANK = {"running": 0, "waiting": 1, "queued": 2, "failed": 3, "aborted": 4, "done": 5}


def _best(job: dict) -> float:
    best = (job.get("summary") or {}).get("best") or {}
    accuracy = best.get("val_accuracy")
    return float(accuracy) if accuracy is not None else -1.0


SORT_KEYS = {
    "created": lambda j: (j["created_at"] or 0.0, j["id"]),
    "name": lambda j: (j["name"].lower(), j["id"]),
    "status": lambda j: (STATUS_RANK.get(j["status"], 9), -(j["created_at"] or 0.0)),
    "progress": lambda j: (j["progress"], j["created_at"] or 0.0),
    "elapsed": lambda j: (j["elapsed"] or 0.0, j["created_at"] or 0.0),
    "best": lambda j: (_best(j), j["created_at"] or 0.0),
}
GROUPS = {"": "no grouping", "sweep": "sweep", "dataset": "dataset", "status": "status"}
STATUS_FILTERS = {"": "any status", "active": "active (queued, waiting, running)",
                  "ended": "ended (done, aborted, failed)", **{s.value: s.value for s in Status}}


@dataclass
class Query:
    q: str = ""
    status: str = ""
    sort: str = "created"
    order: str = "desc"
    group: str = ""

    def __post_init__(self) -> None:
        # Unknown values from a hand-edited URL fall back to defaults instead of failing.
        self.q = (self.q or "").strip()
        self.status = self.status if self.status in STATUS_FILTERS else ""
        self.sort = self.sort if self.sort in SORT_KEYS else "created"
        self.order = "asc" if self.order == "asc" else "desc"
        self.group = self.group if self.group in GROUPS else ""


@dataclass
class Group:
    title: str | None
    jobs: list[dict] = field(default_factory=list)


def matches(job: dict, query: Query) -> bool:
    if query.q:
        needle = query.q.lower()
        if needle not in job["name"].lower() and needle not in job["id"].lower():
            return False
    if query.status == "active":
        return job["status"] in ACTIVE
    if query.status == "ended":
        return job["status"] in ENDED
    return not query.status or job["status"] == query.status


def arrange(jobs: list[dict], query: Query, names: dict[str, str]) -> list[Group]:
    """Filter and sort ``jobs``, then split them into groups (one untitled group when not grouping).

    ``names`` maps job ids to names, to title groups by dataset.
    """
    kept = sorted((j for j in jobs if matches(j, query)), key=SORT_KEYS[query.sort],
                  reverse=query.order == "desc")
    if not query.group:
        return [Group(None, kept)]
    groups: dict[str, Group] = {}
    for job in kept:
        title = _group_title(job, query.group, names)
        groups.setdefault(title, Group(title)).jobs.append(job)
    return list(groups.values())


def _group_title(job: dict, group: str, names: dict[str, str]) -> str:
    if group == "status":
        return job["status"]
    if group == "dataset":
        parent = job.get("parent")
        if job["kind"] == "dataset":
            return f"versions of {names.get(parent, parent)}" if parent else "original datasets"
        return f"dataset {names.get(parent, parent)}" if parent else "no dataset"
    return f"sweep {job['group']}" if job.get("group") else "single jobs"


def add_cells(jobs: list[dict], names: dict[str, str], gpu_labels: dict[str, str]) -> None:
    """Give each job a ``row`` of display strings, so the template only prints them.

    Formatting here in Python, not with template filters and macros, keeps a thousand-row page
    at a few tens of milliseconds.
    """
    now_age, duration = formatting.age, formatting.duration
    for job in jobs:
        summary = job["summary"] or {}
        percent = f"{100 * job['progress']:.1f}"
        text = [f"{percent}%"]
        if summary.get("epoch") and job["kind"] == "model":
            text.append(f"epoch {summary['epoch']:.4g}")
        if job["status"] == "running" and job["eta"]:
            text.append(f"ETA {duration(job['eta'])}")
        notes = ""
        if job["status_detail"] and job["status"] in ("waiting", "queued"):
            notes += f'<div class="small muted">{escape(job["status_detail"])}</div>'
        if job["error"]:
            notes += f'<div class="small error-text clip" title="{escape(job["error"])}">{escape(job["error"])}</div>'
        row: dict[str, Any] = {"percent": percent, "progress_text": " · ".join(text), "notes": Markup(notes),
               "elapsed": duration(job["elapsed"]), "age": now_age(job["created_at"]),
               "clock": formatting.clock(job["created_at"])}
        if job["kind"] == "dataset":
            images = summary.get("images")
            row.update(classes=len(summary.get("classes") or []) or "",
                       images=sum(images.values()) if images else "", skipped=summary.get("skipped_total") or "")
        else:
            best = summary.get("best") or {}
            row.update(
                subtitle=job["id"] + (f" · sweep {job['group']}" if job["group"] else ""),
                dataset=names.get(job["parent"], job["parent"]),
                best=Markup(f'<strong>{best["val_accuracy"]:.2f}%</strong> <span class="small muted">epoch '
                            f'{best["epoch"]:.4g}</span>') if best.get("val_accuracy") is not None else "",
                gpus=", ".join(gpu_labels.get(r, "CPU" if r.startswith("cpu") else r) for r in job["resources"]))
        job["row"] = row
