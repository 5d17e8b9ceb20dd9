"""Run names as the user gave them (issue 46, point 13): a sweep's "[lr=0.01]" is not eaten as
Rich markup in the bar, queued jobs are named with their ids, and `jobs delete` takes several ids
or a sweep's name."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from rich.console import Console
from typer.testing import CliRunner

import trainyard.cli.output as output
from trainyard.cli.main import app
from trainyard.jobs.context import open_context


def test_the_bar_shows_a_sweep_runs_name_with_its_values(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=screen, width=200, force_terminal=True))
    with output.JobProgress(SimpleNamespace(kind="model", name="sweep [lr=0.01, bs=8]")) as bar:
        bar.on_event({"type": "progress", "done": 1, "total": 2})
    assert "model sweep [lr=0.01, bs=8]" in screen.getvalue()


def test_submit_names_its_jobs_and_delete_takes_ids_or_a_sweep(settings, cli_env):
    ctx = open_context(settings)
    dataset = ctx.manager.create("dataset", "d", {}, needs={"pool": "dataset"})  # queued is enough
    queued = CliRunner().invoke(app, ["train", "--dataset", dataset.id, "--network", "lenet", "--lr", "0.01,0.02",
                                      "--name", "sweepy", "--submit", "--json"], env=cli_env)
    assert queued.exit_code == 0, queued.output
    runs = json.loads(queued.stdout)["jobs"]
    said = " ".join(queued.stderr.split())
    assert all(f"{run['id']} ({run['name']})" in said for run in runs) and "sweepy [lr=0.01]" in said
    single = ctx.manager.create("model", "alone", {}, needs={"pool": "cpu"})
    other = ctx.manager.create("model", "other", {}, needs={"pool": "cpu"})
    for job in (single, other):
        ctx.store.update_job(job.id, status="done")
    for run in runs:
        ctx.store.update_job(run["id"], status="done")
    gone = CliRunner().invoke(app, ["jobs", "delete", single.id, other.id, "--json"], env=cli_env)
    assert gone.exit_code == 0, gone.output
    assert json.loads(gone.stdout) == {"deleted": [single.id, other.id]}
    gone = CliRunner().invoke(app, ["jobs", "delete", "sweepy"], env=cli_env)
    assert gone.exit_code == 0, gone.output
    assert all(ctx.store.get_job(run["id"]) is None for run in runs)
    missing = CliRunner().invoke(app, ["jobs", "delete", "nothing-so-called"], env=cli_env)
    assert missing.exit_code == 2 and "no sweep called 'nothing-so-called'" in missing.stderr
