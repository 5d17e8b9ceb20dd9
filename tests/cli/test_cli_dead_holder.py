"""A foreground job killed together with its CLI is not "running" for good: the next CLI
command that reads jobs shows it as interrupted, and ``jobs resume`` takes it (issue 13 item 7)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.status import Status
from trainyard.jobs.context import open_context


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_foreground_job_shows_as_interrupted_and_resumes(settings):
    ctx = open_context(settings)
    job = ctx.manager.create("model", "killed", {"name": "killed"}, needs={"pool": "cpu"}, foreground=True)
    # What `kill -9` of the CLI and its job leaves: running, owned and run by dead processes.
    ctx.store.update_job(job.id, status=Status.RUNNING, owner_pid=_dead_pid(), pid=_dead_pid(),
                         started_at=time.time())
    assert ctx.store.try_lease(job.id, ["cpu:0"], (_dead_pid(), time.time()))
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    listed = CliRunner().invoke(app, ["jobs", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.stdout)["jobs"]
    assert row["status"] == "failed" and row["error"].startswith("interrupted")
    assert ctx.store.leases() == {}  # its CPU slot is free again
    resumed = CliRunner().invoke(app, ["jobs", "resume", job.id, "--submit", "--json"], env=env)
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["status"] == "queued"
    # Issue 22: what the command says first is where the job resumes from
    assert resumed.stderr.startswith(f"resuming {job.id} from the start (it has no checkpoint) on the server")
