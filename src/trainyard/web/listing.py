"""The home page's job tables: the query from the address, groups and display cells of a page.

Filtering, sorting and the page cut happen in SQL (jobs/views/listing_query.py); here a page of `job_brief`
dicts, which need no file reads, is split into groups and given its display strings. The same
query (``q``, ``status``, ``sort``, ``order``, ``group``, the pages) drives the first render and
every htmx refresh, so a refresh never undoes what the user chose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from trainyard.core import formatting
from trainyard.core.status import Status
from trainyard.jobs.store.labels import Labels
from trainyard.jobs.views.listing_query import SORTS, PageQuery

GROUPS = {"": "no grouping", "sweep": "sweep", "dataset": "dataset", "status": "status"}
STATUS_FILTERS = {"": "any status", "active": "active (queued, waiting, running)",
                  "ended": "ended (done, aborted, failed)", **{s.value: s.value for s in Status}}
PER_PAGE = 50  # rows per table: a page, not every job, is rendered on each refresh


@dataclass
class Query:
    q: str = ""
    status: str = ""
    sort: str = "created"
    order: str = "desc"
    group: str = ""
    dpage: int = 1  # the datasets table's page
    mpage: int = 1  # the models table's page
    tag: str = ""

    def __post_init__(self) -> None:
        # Unknown values from a hand-edited URL fall back to defaults instead of failing.
        self.q = (self.q or "").strip()
        self.tag = (self.tag or "").strip().lower()[:40]
        self.status = self.status if self.status in STATUS_FILTERS else ""
        self.sort = self.sort if self.sort in SORTS else "created"
        self.order = "asc" if self.order == "asc" else "desc"
        self.group = self.group if self.group in GROUPS else ""
        self.dpage, self.mpage = max(1, self.dpage), max(1, self.mpage)

    def for_kind(self, kind: str) -> PageQuery:
        page = self.dpage if kind == "dataset" else self.mpage
        return PageQuery(kind, self.q, self.status, self.sort, self.order, self.group, page, PER_PAGE, self.tag)


@dataclass
class Group:
    title: str | None
    jobs: list[dict] = field(default_factory=list)
    sweep: str | None = None  # the sweep's name when grouped by sweep: its page and compare links


def arrange(jobs: list[dict], group: str, names: dict[str, str]) -> list[Group]:
    """Split a page of jobs (already in display order, see jobs/views/listing_query.py) into titled groups.

    ``names`` maps job ids to names, to title groups by dataset.
    """
    if not group:
        return [Group(None, jobs)]
    groups: list[Group] = []
    for job in jobs:
        title = _group_title(job, group, names)
        if not groups or groups[-1].title != title:
            groups.append(Group(title, sweep=job.get("group") if group == "sweep" else None))
        groups[-1].jobs.append(job)
    return groups


def _group_title(job: dict, group: str, names: dict[str, str]) -> str:
    if group == "status":
        return job["status"]
    if group == "dataset":
        parent = job.get("parent")
        if job["kind"] == "dataset":
            return f"versions of {names.get(parent, parent)}" if parent else "original datasets"
        return f"dataset {names.get(parent, parent)}" if parent else "no dataset"
    return f"sweep {job['group']}" if job.get("group") else "single jobs"


def add_cells(jobs: list[dict], names: dict[str, str], gpu_labels: dict[str, str],
              classes: dict[str, int] | None = None) -> None:
    """Give each job a ``row`` of display strings, so the template only prints them. ``classes``:
    the number of classes of the models' datasets, which says where chance is.

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
        if job["status"] == Status.RUNNING and job["eta"]:
            text.append(f"ETA {duration(job['eta'])}")
        notes = ""
        stopped = (summary.get("stopped_early") or {}).get("message")  # a sweep's run stopped early
        waiting = job["status"] in (Status.WAITING, Status.QUEUED)
        if job["status_detail"] and (waiting or job["status_detail"] == stopped):
            notes += f'<div class="small muted">{escape(job["status_detail"])}</div>'
        if job["error"]:
            notes += f'<div class="small error-text clip" title="{escape(job["error"])}">{escape(job["error"])}</div>'
        for finding in summary.get("diagnosis") or []:  # training that cannot learn (training/diagnosis.py)
            notes += f'<div class="small error-text clip diagnosis" title="{escape(finding)}">{escape(finding)}</div>'
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
                best=_best_cell(best, (classes or {}).get(job["parent"])),
                gpus=", ".join(gpu_labels.get(r, "CPU" if r.startswith("cpu") else r) for r in job["resources"]))
        job["row"] = row


def add_labels(jobs: list[dict], labels: dict[str, Labels]) -> None:
    """Each row's tags as small links that filter the list by that tag, and its notes' first
    line under the name (all of them in its title)."""
    for job in jobs:
        found = labels.get(job["id"]) or Labels()
        tags = found.tags
        job["row"]["tags"] = Markup("".join(f' <a class="tag" href="/?tag={escape(t)}">{escape(t)}</a>' for t in tags))
        notes = found.notes
        job["row"]["user_notes"] = Markup(
            f'<div class="small job-notes clip" title="{escape(notes)}">{escape(notes.splitlines()[0])}</div>'
            if notes else "")


def _best_cell(best: dict, classes: int | None = None) -> Markup | str:
    """A model row's best validation figure: accuracy in percent, coloured by how far above chance
    it is, or a detector's mAP@0.5."""
    grade, title = "", ""
    if best.get("val_accuracy") is not None:
        value = f"{best['val_accuracy']:.2f}%"
        if classes and classes > 1:
            grade, title = accuracy_grade(best["val_accuracy"], classes)
    elif best.get("val_map50") is not None:
        value = f"mAP@0.5 {best['val_map50']:.3f}"
    elif best.get("val_micro_f1") is not None:
        value = f"micro F1 {best['val_micro_f1']:.3f}"
    else:
        return ""
    return Markup(f'<strong class="{grade}" title="{title}">{value}</strong> '
                  f'<span class="small muted">epoch {best["epoch"]:.4g}</span>')


def accuracy_grade(accuracy: float, classes: int) -> tuple[str, str]:
    """(CSS class, words) for an accuracy in percent: by how much of the way from chance
    (100 / classes) to 100 % it got. Chance level is not a success, however it is drawn."""
    chance = 100.0 / classes
    gained = (accuracy - chance) / (100.0 - chance)
    grade = "best-chance" if gained < 0.1 else "best-fair" if gained < 0.5 else "best-good"
    return grade, f"chance is {chance:.1f}% with {classes} classes"
