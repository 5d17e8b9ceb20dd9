"""When things happen during training, in batches: loss read-backs, validations and snapshots.

Training counts batches across epochs (batch b of epoch e is global batch
``e * batches_per_epoch + b``) and steps the optimizer every ``accumulation`` batches. Every
event point falls on an optimizer step, so a checkpoint never holds half-accumulated gradients
and a resumed run continues exactly. Validation and snapshot intervals are in (fractional)
epochs; a point is reported with its nominal epoch (1.5, not 1.4957), and the end of training is
always both a validation and a snapshot point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

READBACKS_PER_EPOCH = 8  # how often the training loss crosses from the device to the host


@dataclass(frozen=True)
class Point:
    """What to do after global batch ``batches``; epochs are None where nothing is due."""

    batches: int
    readback: bool = False
    validate: float | None = None
    snapshot: float | None = None


def clean_epoch(epoch: float) -> float | int:
    """An epoch as reported: 3 rather than 3.0, 0.3 rather than 0.30000000000000004."""
    epoch = round(float(epoch), 4)
    return int(epoch) if epoch == int(epoch) else epoch


class Schedule:
    """The event points of one training run, from its length and intervals."""

    def __init__(self, batches_per_epoch: int, epochs: float, accumulation: int = 1,
                 val_interval: float = 1.0, snapshot_interval: float = 1.0,
                 readbacks_per_epoch: int = READBACKS_PER_EPOCH):
        if batches_per_epoch < 1:
            raise ValueError("the training split has no batch to train on")
        self.batches_per_epoch = batches_per_epoch
        self.accumulation = accumulation
        self.epochs = epochs
        self.total_iterations = max(1, round(epochs * batches_per_epoch / accumulation))
        self.total_batches = self.total_iterations * accumulation
        every = max(1, round(batches_per_epoch / readbacks_per_epoch / accumulation)) * accumulation
        self._readback_every = every
        self._validate = self._points(val_interval)
        self._snapshot = self._points(snapshot_interval)

    def _points(self, interval: float) -> dict[int, float | int]:
        """{global batch: nominal epoch} for every multiple of ``interval``, plus the end."""
        points: dict[int, float | int] = {}
        if interval > 0:
            for k in range(1, math.ceil(self.epochs / interval + 1e-9)):
                epoch = k * interval
                points[self.batch_at(epoch)] = clean_epoch(epoch)  # a later epoch wins a tie
        points[self.total_batches] = clean_epoch(self.epochs)
        return points

    def batch_at(self, epoch: float) -> int:
        """The global batch count of the optimizer step closest to ``epoch``."""
        steps = round(epoch * self.batches_per_epoch / self.accumulation)
        return min(max(steps, 1) * self.accumulation, self.total_batches)

    def epoch_of(self, batches: int) -> float | int:
        """The fractional epoch after ``batches`` global batches."""
        return clean_epoch(batches / self.batches_per_epoch)

    def at(self, batches: int) -> Point | None:
        """What is due after global batch ``batches`` (None for an ordinary step)."""
        validate, snapshot = self._validate.get(batches), self._snapshot.get(batches)
        due = validate is not None or snapshot is not None
        # Read the loss back at every validation and snapshot too, so a checkpoint never has
        # unreported loss: a resumed run reports exactly what the uninterrupted one would.
        if not due and batches % self._readback_every:
            return None
        return Point(batches, True, validate, snapshot)

    @property
    def snapshot_epochs(self) -> list[float | int]:
        return sorted(self._snapshot.values())

    @property
    def validation_epochs(self) -> list[float | int]:
        return sorted(self._validate.values())
