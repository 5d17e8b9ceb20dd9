"""The job manager: start, wait, abort, crash, adopt orphans, release leases."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from tests.conftest import tick_until, wait_for
from trainyard.jobs.kinds.registry import JobKind, register_kind
from trainyard.jobs.runs.manager import JobError, JobManager
from trainyard.jobs.scheduling.resources import GPU, NotSatisfiable, Pools

SCRIPT_PREFIX = """
import sys, time, signal
from trainyard.core.events import EventWriter
w = EventWriter(sys.argv[1])
w.status("running")
"""
SCRIPTS = {
    "quick": "w.progress(1, 2); w.emit('summary', best=1); w.status('done')",
    "sleep": ("signal.signal(signal.SIGTERM, lambda *a: (w.status('aborted'), sys.exit(0)))\n"
              "w.progress(1, 4)\ntime.sleep(60)"),
    "stubborn": "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)",
    "crash": "sys.exit(3)",
    "fail": "w.status('failed', error='the input was bad'); sys.exit(1)",
}


@dataclass(frozen=True)
class ScriptKind(JobKind):
    script: str = ""

    def command(self, folder, gpu_ids):
        return [sys.executable, "-c", SCRIPT_PREFIX + self.script, str(folder.work)]


for name, script in SCRIPTS.items():
    register_kind(ScriptKind(f"test-{name}", "", lambda job, folder: {}, script=script))


def make_job(ctx, script: str, needs=None, **kw):
    return ctx.manager.create(f"test-{script}", script, {}, needs=needs or {"pool": "cpu"}, **kw)


def test_a_job_runs_to_done_and_reports_progress_and_summary(ctx):
    job = make_job(ctx, "quick")
    job = tick_until(ctx, job.id, {"done"})
    assert job.progress == 1.0 and job.summary["best"] == 1
    assert [h.status for h in ctx.store.history(job.id)] == ["queued", "running", "done"]
    assert ctx.store.leases() == {}


def test_reported_failure_keeps_the_jobs_message(ctx):
    job = tick_until(ctx, make_job(ctx, "fail").id, {"failed"})
    assert job.error == "the input was bad"


def test_crash_without_a_word_fails_with_the_exit_code_and_frees_resources(ctx):
    job = tick_until(ctx, make_job(ctx, "crash").id, {"failed"})
    assert "exit code 3" in job.error
    assert ctx.store.leases() == {}


def test_abort_stops_the_process_group_and_releases_the_lease(ctx):
    job = make_job(ctx, "sleep")
    job = tick_until(ctx, job.id, {"running"})
    assert ctx.store.leases() == {"cpu:0": job.id}
    job = ctx.manager.abort(job.id)
    assert job.status == "aborted"
    assert ctx.store.leases() == {}
    with pytest.raises(JobError, match="already ended"):
        ctx.manager.abort(job.id)


def test_a_job_ignoring_sigterm_is_killed_after_the_grace_period(ctx):
    job = tick_until(ctx, make_job(ctx, "stubborn").id, {"running"})
    job = ctx.manager.abort(job.id)
    assert job.status == "aborted"
    assert not _alive(job.pid)


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_a_second_cpu_job_waits_for_the_slot(ctx):
    first = make_job(ctx, "sleep")
    second = make_job(ctx, "quick")
    tick_until(ctx, first.id, {"running"})
    ctx.manager.tick()
    waiting = ctx.store.get_job(second.id)
    assert waiting.status == "waiting"
    assert waiting.status_detail == f"waiting for job {first.id} (test-sleep {first.name}) to free the CPU"
    ctx.manager.abort(first.id)
    assert tick_until(ctx, second.id, {"done"}).status == "done"


def test_a_model_waits_for_its_dataset_and_fails_if_the_dataset_fails(ctx):
    dataset = make_job(ctx, "sleep", needs={"pool": "dataset"})
    model = make_job(ctx, "quick", parent_id=dataset.id)
    tick_until(ctx, dataset.id, {"running"})
    ctx.manager.tick()
    job = ctx.store.get_job(model.id)
    assert job.status == "waiting" and job.status_detail.startswith("waiting for test-sleep sleep")
    ctx.manager.abort(dataset.id)
    job = tick_until(ctx, model.id, {"failed"})
    assert dataset.id in job.error and "aborted" in job.error


def test_an_orphaned_running_job_is_adopted_and_finished(ctx, settings):
    """A job whose watcher died (server restart, killed CLI) is finished by the next manager."""
    job = make_job(ctx, "quick")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tick_until(ctx, job.id, {"running", "done"})
    ctx.store.update_job(job.id, status="running", owner_pid=dead.pid)
    other = JobManager(settings, ctx.store, ctx.pools)
    wait_for(lambda: (other.tick(), ctx.store.get_job(job.id).status == "done")[1], 30)
    assert ctx.store.leases() == {}


def test_gpu_requests_that_can_never_be_met_are_refused_at_once(settings, ctx):
    ctx.manager.pools = Pools(1, 1, [GPU(0, "Fake", 2**34)])
    with pytest.raises(NotSatisfiable, match="2 GPUs asked for"):
        make_job(ctx, "quick", needs={"pool": "gpu", "count": 2})
    with pytest.raises(NotSatisfiable, match="do not exist"):
        make_job(ctx, "quick", needs={"pool": "gpu", "ids": [3]})


def test_delete_refuses_a_dataset_that_a_model_uses(ctx):
    dataset = tick_until(ctx, make_job(ctx, "quick", needs={"pool": "dataset"}).id, {"done"})
    model = make_job(ctx, "quick", parent_id=dataset.id)
    with pytest.raises(JobError, match="used by other jobs"):
        ctx.manager.delete(dataset.id)
    ctx.manager.delete(model.id)
    ctx.manager.delete(dataset.id)
    assert not ctx.manager.folder(dataset.id).path.exists()
    assert ctx.store.list_jobs() == []


def test_a_second_manager_in_the_process_leaves_a_job_being_launched_alone(ctx):
    """Claimed by the other manager here, its pid not yet recorded: running, not a dead job.
    (The CLI's manager and a server's share a process in tests; a claimed job has no pid until
    its process starts.)"""
    from trainyard.core.status import Status

    job = make_job(ctx, "quick")
    other = JobManager(ctx.settings, ctx.store, ctx.manager.pools)
    assert ctx.store.update_job_if(job, status=Status.RUNNING, pid=None, started_at=time.time(), **other.owner)
    ctx.manager.tick()
    assert ctx.store.get_job(job.id).status == "running"
