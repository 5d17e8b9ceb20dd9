"""Which snapshot answers a request, and the errors inference reports; no torch here.

The server and the CLI pick a model job's checkpoint (and create inference jobs) without loading
torch; loader.py, which does load the network, re-exports these names.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainyard.artifact.checkpoint import CheckpointError, checkpoint_epochs, checkpoint_for_epoch
from trainyard.core import errors
from trainyard.core.errors import InvalidInput


class InferenceError(InvalidInput):
    """A request that cannot be served (unusable input, bad settings); the message says why."""


class NotFound(errors.NotFound, InferenceError):
    """Something asked for that does not exist: an epoch without a checkpoint, a file."""


class NotReady(errors.Conflict, InferenceError):
    """A model that has no snapshot yet (its first is written after its first epoch)."""


def model_checkpoint(job_dir: str | os.PathLike, epoch: float | None = None) -> tuple[float, Path]:
    """(epoch, checkpoint path) of a model job for ``epoch`` (None: the latest).

    NotReady when the job has no snapshot at all, NotFound when ``epoch`` has none.
    """
    if epoch is None:
        epochs = checkpoint_epochs(job_dir)
        if not epochs:
            raise NotReady("this model has no snapshot yet; one is written after each snapshot "
                           "interval (by default every epoch)")
        latest = max(epochs)
        return latest, epochs[latest]
    try:
        return epoch, checkpoint_for_epoch(job_dir, epoch)
    except CheckpointError as exc:
        raise NotFound(str(exc)) from None

