"""What the routes about several runs answer: compare, a sweep's page, and the weights store.

Like web/schemas/jobs.py, these describe documents built elsewhere (jobs/views/compare.py,
jobs/views/sweep.py, weights/store.py) and allow more fields than they name.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trainyard.core.status import Status
from trainyard.web.schemas.jobs import Number, Open, Point


class ComparedRun(Open):
    id: str
    name: str
    status: Status
    settings: dict[str, Any]  # flattened names, e.g. "lr.base_lr"
    best: dict[str, Any] | None  # {epoch, val_accuracy}
    final: dict[str, Any] | None  # the last epoch's figures


class Comparison(BaseModel):
    jobs: list[ComparedRun]
    differs: list[str]  # names of the settings whose values differ between the runs
    series: dict[str, dict[str, list[Point]]]  # job id -> metric -> [[epoch, value], ...]


class StoppedEarly(Open):
    epoch: Number
    message: str
    at: Number | None


class SweepRun(Open):
    id: str
    name: str
    status: Status
    epoch: Number
    epochs: Number | None
    best: dict[str, Any] | None
    stopped: StoppedEarly | None


class Sweep(Open):
    name: str
    runs: list[SweepRun]
    counts: dict[str, int]  # status -> runs
    best: dict[str, Any] | None
    stopped: int
    epochs_saved: Number
    early_stop: bool
    compare_ids: list[str]


class WeightsRow(Open):
    """A store entry (weights/store.py ``describe``), with its pull's state where one is asked."""

    name: str
    network: str
    source: str
    present: bool
    path: str | None
    accuracy: dict[str, Number]


class WeightsPage(Open):
    weights: list[WeightsRow]
    total: int
