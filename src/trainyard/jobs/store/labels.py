"""Tags and notes that people put on jobs: validated, stored beside the job (``job_labels``).

A tag is 1 to 32 letters, digits or ``. _ - : +`` (``lr-search``, ``v2``, ``baseline``), kept
in lower case, at most 16 per job; notes are free text up to 10,000 characters. Setting either
touches the job's ``updated_at``, so the home list redraws with the new tags.
"""

from __future__ import annotations

import re

from sqlalchemy import select

from trainyard.core.document import Document
from trainyard.core.errors import InvalidInput
from trainyard.jobs.store.job_tables import JobLabel
from trainyard.jobs.store.store import Store

TAG = re.compile(r"[a-z0-9][a-z0-9._:+-]{0,31}")
MAX_TAGS = 16
MAX_NOTES = 10_000


class Labels(Document):
    """A job's tags (sorted) and notes; a job that has none has ``[]`` and ``""``."""

    tags: list[str] = []
    notes: str = ""


def clean_tags(tags: list[str]) -> list[str]:
    """Tags in lower case, each once, in the order given; InvalidInput naming the first bad one."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags should be a list of words, e.g. [\"baseline\", \"lr-search\"]")
    cleaned = list(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))
    for tag in cleaned:
        if not TAG.fullmatch(tag):
            shown = tag if len(tag) <= 40 else tag[:40] + "…"
            raise InvalidInput(f"tag {shown!r} should be 1 to 32 letters, digits or . _ - : + "
                               "(starting with a letter or digit)")
    if len(cleaned) > MAX_TAGS:
        raise InvalidInput(f"{len(cleaned)} tags given; a job takes at most {MAX_TAGS}")
    return cleaned


def clean_notes(notes: str) -> str:
    if not isinstance(notes, str):
        raise InvalidInput("notes should be text")
    if len(notes) > MAX_NOTES:
        raise InvalidInput(f"notes of {len(notes):,} characters; at most {MAX_NOTES:,}")
    return notes.strip()


def set_labels(store: Store, job_id: str, tags: list[str] | None = None, notes: str | None = None) -> Labels:
    """Replace the job's tags and/or notes (None leaves that one as it is); the new labels."""
    tags = clean_tags(tags) if tags is not None else None
    notes = clean_notes(notes) if notes is not None else None
    with store.session.begin() as s:
        row = s.get(JobLabel, job_id)
        if row is None:
            row = JobLabel(job_id=job_id, tags="", notes="")
            s.add(row)
        if tags is not None:
            row.tags = _joined(tags)
        if notes is not None:
            row.notes = notes
        labels = _labels(row)
    store.update_job(job_id)  # a new updated_at: listings see the change
    return labels


def labels_of(store: Store, job_ids: list[str]) -> dict[str, Labels]:
    """The labels of every one of ``job_ids``, by id (empty where none)."""
    found = {i: Labels() for i in job_ids}
    if job_ids:
        with store.session() as s:
            for row in s.scalars(select(JobLabel).where(JobLabel.job_id.in_(job_ids))):
                found[row.job_id] = _labels(row)
    return found


def has_tag(tag: str):
    """A condition on job ids: the jobs tagged ``tag`` (for the listing's tag filter)."""
    needle = f",{tag.strip().lower()},"
    return select(JobLabel.job_id).where(JobLabel.tags.contains(needle, autoescape=True))


def all_tags(store: Store) -> list[str]:
    """Every tag in use, sorted (the home list's tag filter offers these)."""
    with store.session() as s:
        rows = s.scalars(select(JobLabel.tags).where(JobLabel.tags != ""))
        return sorted({t for joined in rows for t in joined.strip(",").split(",") if t})


def _joined(tags: list[str]) -> str:
    return f",{','.join(sorted(tags))}," if tags else ""


def _labels(row: JobLabel) -> Labels:
    return Labels(tags=[t for t in (row.tags or "").strip(",").split(",") if t], notes=row.notes or "")
