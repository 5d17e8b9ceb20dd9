"""The documents about several runs: compare (jobs/views/compare.py) and sweeps (jobs/views/sweep.py).

Built as these models there and served as they are (core/document.py): every field named and
typed, no other allowed. ``best`` and ``final`` figures stay open ``dict[str, Any]``: a
classifier's and a detector's name different metrics.
"""

from __future__ import annotations

from typing import Any

from trainyard.core.document import Document, Number, Point
from trainyard.core.status import Status


class ComparedRun(Document):
    id: str
    name: str
    status: Status
    group: str | None  # the sweep it belongs to
    settings: dict[str, Any]  # flattened names, e.g. "lr.base_lr"
    best: dict[str, Any] | None  # {epoch, val_accuracy}
    final: dict[str, Any] | None  # the last epoch's figures
    tags: list[str] = []
    notes: str = ""


class Comparison(Document):
    jobs: list[ComparedRun]
    differs: list[str]  # names of the settings whose values differ between the runs
    series: dict[str, dict[str, list[Point]]]  # job id -> metric -> [[epoch, value], ...]


class StoppedEarly(Document):
    epoch: Number
    message: str
    at: Number | None


class SweepRun(Document):
    id: str
    name: str
    status: Status
    epoch: Number
    epochs: Number | None
    best: dict[str, Any] | None
    stopped: StoppedEarly | None
    notes: str = ""
    diagnosis: list[str] = []  # what the training cannot do (training/diagnosis.py), in plain words


class Sweep(Document):
    name: str
    runs: list[SweepRun]
    counts: dict[str, int]  # status -> runs
    best: SweepRun | None  # the run with the best result
    stopped: int
    epochs_saved: Number
    early_stop: bool
    compare_ids: list[str]


class BestOfSweep(Document):
    id: str
    name: str
    best: dict[str, Any]  # {epoch, val_accuracy} or {epoch, val_map50}


class NotedRun(Document):
    id: str
    name: str
    notes: str


class SweepLine(Document):
    """One sweep in the list of sweeps (jobs/views/sweep.py ``sweeps``)."""

    name: str
    runs: int
    counts: dict[str, int]  # status -> runs
    status: Status  # the furthest along of its active runs, else done if any run finished
    best: BestOfSweep | None
    created_at: Number
    notes: list[NotedRun]  # the runs with notes


class SweepList(Document):
    sweeps: list[SweepLine]  # newest first
