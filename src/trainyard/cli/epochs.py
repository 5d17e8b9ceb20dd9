"""The --epoch option of `classify`, `evaluate`, `detect` and `export`: an epoch number, ``best``
(the default: the best snapshot by the task's validation metric) or ``last``. The choice is made
here, once, and said on stderr ("snapshot of epoch 7, the best by validation accuracy"), so the
rest of a command works on a concrete epoch."""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.output import err

HELP = "snapshot: an epoch number, best (the default: the best validation score) or last (the latest)"


def epoch_option():
    return typer.Option(None, "--epoch", help=HELP)


def chosen_epoch(model: str, job_dir: Path, text: str | None) -> float:
    """The epoch of model job ``model``'s snapshot that ``--epoch text`` asks for, said on stderr
    when it was chosen (best, last) rather than given; a UserError naming the model otherwise."""
    from trainyard.inference.snapshots import InferenceError, choose_snapshot, parse_epoch

    try:
        snapshot = choose_snapshot(job_dir, parse_epoch(text))
    except InferenceError as exc:
        raise type(exc)(f"model {model}: {exc}") from None
    if snapshot.why:
        err.print(f"model {model}: snapshot of epoch {snapshot.epoch:g}, {snapshot.why}", soft_wrap=True,
                  markup=False)
    return snapshot.epoch
