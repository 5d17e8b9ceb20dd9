"""`trainyard jobs show ID` without --json reads like the job page (issue 31, point 4): settings
grouped under its labels, local dates, durations, the best epoch, snapshots and the timeline,
and no Python internals (``<Status.DONE: 'done'>``, epoch seconds, dict reprs)."""

from __future__ import annotations

import re
import time

from typer.testing import CliRunner

from trainyard.cli.main import app


def test_jobs_show_prints_a_human_layout(trained):
    shown = CliRunner().invoke(app, ["jobs", "show", trained.model_id], env=trained.env())
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert "<Status." not in out and "{" not in out
    assert not re.search(r"\b1[0-9]{9}\.[0-9]+", out)  # no epoch seconds
    job = trained.ctx.store.get_job(trained.model_id)
    assert out.splitlines()[0] == f"model {job.id}  {job.name}  [done]"
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.created_at)) in out
    for heading in ("Data", "Network", "Solver", "Timeline"):
        assert f"\n{heading}\n" in out
    assert re.search(r"^  Base learning rate +\S", out, re.MULTILINE)
    assert re.search(r"^  best val accuracy +[0-9.]+% at epoch \d", out, re.MULTILINE)
    assert re.search(r"^  snapshots \(epochs\) +\d", out, re.MULTILINE)
    assert re.search(r"^  ran for +\d+(s|m)", out, re.MULTILINE)
    assert re.search(r"^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  running +\d", out, re.MULTILINE)
