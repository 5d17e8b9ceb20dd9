"""Which snapshot answers a request, and the errors inference reports; no torch here.

The server and the CLI pick a model job's checkpoint (and create inference jobs) without loading
torch; loader.py, which does load the network, re-exports these names. Without an epoch the
snapshot is the best one by the task's validation metric (core/vocabulary.py's BEST_METRIC: a
run's accuracy often peaks before its last epoch), ``last`` asks for the latest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from trainyard.artifact.checkpoint import CheckpointError, checkpoint_epochs, checkpoint_for_epoch
from trainyard.core import errors
from trainyard.core.errors import InvalidInput
from trainyard.core.events import read_events
from trainyard.core.paths import JobFolder
from trainyard.core.vocabulary import BEST_METRIC

BEST, LAST = "best", "last"
METRIC_WORDS = {"val_accuracy": "validation accuracy", "val_map50": "validation mAP@0.5",
                "val_micro_f1": "validation micro F1"}


class InferenceError(InvalidInput):
    """A request that cannot be served (unusable input, bad settings); the message says why."""


class NotFound(errors.NotFound, InferenceError):
    """Something asked for that does not exist: an epoch without a checkpoint, a file."""


class NotReady(errors.Conflict, InferenceError):
    """A model that has no snapshot yet (its first is written after its first epoch)."""


@dataclass(frozen=True)
class Snapshot:
    """The snapshot a request gets, and why that one (for the line the CLI prints)."""

    epoch: float
    path: Path
    why: str  # "" for an epoch asked for by number


def parse_epoch(text: str | None) -> float | str | None:
    """The CLI's --epoch: a number, ``best`` (as None: the default) or ``last``."""
    if text is None or text.strip().lower() == BEST:
        return None
    if text.strip().lower() == LAST:
        return LAST
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(f"--epoch {text!r} should be an epoch number, {BEST} or {LAST}") from None


def model_checkpoint(job_dir: str | os.PathLike, epoch: float | str | None = None) -> tuple[float, Path]:
    """(epoch, checkpoint path) of a model job for ``epoch`` (None: the best, ``last``: the latest).

    NotReady when the job has no snapshot at all, NotFound when ``epoch`` has none.
    """
    chosen = choose_snapshot(job_dir, epoch)
    return chosen.epoch, chosen.path


def choose_snapshot(job_dir: str | os.PathLike, epoch: float | str | None = None) -> Snapshot:
    """`model_checkpoint`'s snapshot, saying why it is that one."""
    if epoch is not None and not isinstance(epoch, str):
        try:
            return Snapshot(epoch, checkpoint_for_epoch(job_dir, epoch), "")
        except CheckpointError as exc:
            raise NotFound(str(exc)) from None
    epochs = checkpoint_epochs(job_dir)
    if not epochs:
        raise NotReady("this model has no snapshot yet; one is written after each snapshot "
                       "interval (by default every epoch)")
    latest = max(epochs)
    best = None if epoch == LAST else best_epoch(job_dir, set(epochs))
    if best is None:
        return Snapshot(latest, epochs[latest], "the latest")
    chosen, metric = best
    return Snapshot(chosen, epochs[chosen], f"the best by {METRIC_WORDS.get(metric, metric)}"
                                            + ("" if chosen == latest else f" (--epoch last: epoch {latest:g})"))


def best_epoch(job_dir: str | os.PathLike, snapshots: set[float]) -> tuple[float, str] | None:
    """(epoch, metric) of the snapshot with the best validation score (the later one of a tie),
    or None where no snapshot's epoch was validated."""
    scores: dict[str, dict[float, float]] = {}
    try:
        for event in read_events(JobFolder(job_dir).events, {"metric"}):
            if event.get("name") in METRIC_WORDS and event.get("epoch") in snapshots:
                scores.setdefault(event["name"], {})[event["epoch"]] = event["value"]
    except OSError:  # no events (an imported model): the latest
        return None
    for metric in BEST_METRIC.values():
        points = scores.get(metric)
        if points:
            return max(points, key=lambda e: (points[e], e)), metric
    return None

