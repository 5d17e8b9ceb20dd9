"""Early stopping's grace period (issue 31, point 8): a sweep's runs are judged only from
--early-stop-min-epochs on (default 3), so a later run on a one-slot queue is not stopped at
epoch 1 against a finished first run; `train --help` says how the stopping works."""

from __future__ import annotations

import inspect

from typer.testing import CliRunner

from trainyard.cli import train as train_cli
from trainyard.cli.main import app
from trainyard.jobs.runs.early_stop import DEFAULT_MIN_EPOCHS, decide

T0 = 1_700_000_000.0


def points(values, start=T0):
    return [(start + i, i + 1, v) for i, v in enumerate(values)]


def test_a_run_is_not_judged_before_the_grace_period_ends():
    finished = points([50, 70, 80, 90, 92, 93])
    early = {"first": finished, "later": points([30, 40], start=T0 + 100)}
    assert decide(early, "later", min_epochs=3) is None  # epochs 1 and 2: still in its grace period
    judged = {"first": finished, "later": points([30, 40, 45], start=T0 + 100)}
    verdict = decide(judged, "later", min_epochs=3)
    assert verdict is not None and verdict["judged_at"] == 3 and verdict["epoch"] == 3


def test_the_default_grace_and_the_help_say_how_stopping_works():
    assert DEFAULT_MIN_EPOCHS == 3
    option = inspect.signature(train_cli.train).parameters["early_stop_min_epochs"].default
    assert option.default == DEFAULT_MIN_EPOCHS  # the CLI spells it without importing jobs
    shown = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    text = " ".join(shown.output.split())
    assert "--early-stop-min-epochs" in text
    assert "the best run always finishes" in text and "worse half" in text
