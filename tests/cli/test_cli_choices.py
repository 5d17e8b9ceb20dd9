"""The CLI's help offers exactly what the registries hold: solvers, LR policies, resize modes."""

from __future__ import annotations

from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.datasets.resize_plans import RESIZE_MODES
from trainyard.training.lr_policies import lr_policy_names
from trainyard.training.solvers import solver_names


def help_text(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_train_help_lists_every_solver_and_lr_policy():
    text = help_text("train")
    assert " | ".join(solver_names()) in text and "adamw" in solver_names()
    assert " | ".join(lr_policy_names()) in text and "cosine" in lr_policy_names()


def test_dataset_create_help_lists_every_resize_mode():
    assert " | ".join(RESIZE_MODES) in help_text("dataset", "create")
