"""Liveness across machines: a job's holder on another machine is judged by its heartbeat in the
store; silent longer than TRAINYARD_HEARTBEAT_TIMEOUT_S, its running jobs end as interrupted
(issue 19 item 6), and `jobs resume` takes them."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import wait_for
from tests.jobs.test_manager import make_job, tick_until
from trainyard.core.events import EventWriter
from trainyard.core.status import Status
from trainyard.jobs.runs import heartbeat
from trainyard.jobs.runs.manager import JobManager
from trainyard.jobs.store.liveness_tables import Holder
from trainyard.jobs.store.store import Job

OTHER_HOST = "node-b.example"


def _running_elsewhere(ctx, kind: str = "model", beat_age_s: float | None = None):
    """A job running under a holder on another machine, whose last heartbeat is ``beat_age_s``
    old (None: it never beat). Its pid here belongs to an unrelated process of this machine."""
    job = ctx.manager.create(kind, "remote", {"name": "remote"}, needs={"pool": "cpu"})
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    ctx.store.update_job(job.id, status=Status.RUNNING, pid=bystander.pid, started_at=time.time(),
                         owner_pid=4242, owner_host=OTHER_HOST)
    if beat_age_s is not None:
        heartbeat.renew(ctx.store, OTHER_HOST, 4242, started=time.time() - 3600)
        stale = time.time() - beat_age_s
        with ctx.store.session.begin() as s:
            s.get(Holder, (OTHER_HOST, 4242)).beat_at = stale
    return job, bystander


def test_a_job_whose_holder_elsewhere_went_silent_fails_naming_the_host_and_resumes(ctx, settings):
    job, bystander = _running_elsewhere(ctx, beat_age_s=settings.heartbeat_timeout_s + 60)
    try:
        ctx.manager.reap()
        ended = ctx.store.get_job(job.id)
        assert ended.status == Status.FAILED
        assert ended.error.startswith(f"interrupted: {OTHER_HOST} stopped answering")
        assert f"trainyard jobs resume {job.id}" in ended.error
        assert bystander.poll() is None  # its pid means nothing here: nothing of this machine is signalled
        assert ctx.manager.resume(job.id).status == Status.QUEUED
    finally:
        bystander.kill()


def test_a_job_that_finished_as_its_holder_died_is_reconciled_as_done(ctx, settings):
    """Its events (the job folder is shared) say it finished: the manager that takes over records
    it done, not failed as interrupted, and it stays done."""
    job, bystander = _running_elsewhere(ctx, beat_age_s=settings.heartbeat_timeout_s + 60)
    try:
        with EventWriter(ctx.manager.folder(job.id).work) as events:
            events.status(Status.DONE)
        ctx.manager.reap()
        ctx.manager.tick()
        ended = ctx.store.get_job(job.id)
        assert ended.status == Status.DONE and ended.error is None
    finally:
        bystander.kill()


def test_a_job_whose_holder_elsewhere_beats_is_left_to_it(ctx, settings):
    job, bystander = _running_elsewhere(ctx, beat_age_s=1.0)
    try:
        ctx.manager.tick()
        kept = ctx.store.get_job(job.id)
        assert kept.status == Status.RUNNING and kept.owner_host == OTHER_HOST
    finally:
        bystander.kill()


def test_an_abort_asked_of_a_silent_holder_ends_the_job_aborted(ctx, settings):
    job, bystander = _running_elsewhere(ctx, beat_age_s=settings.heartbeat_timeout_s + 60)
    try:
        assert ctx.manager.abort(job.id).status == Status.ABORTED
        assert bystander.poll() is None
    finally:
        bystander.kill()


def test_a_holder_that_never_beat_is_judged_by_its_jobs_last_write(ctx, settings):
    job, bystander = _running_elsewhere(ctx)  # its row was written just now: alive
    try:
        ctx.manager.tick()
        assert ctx.store.get_job(job.id).status == Status.RUNNING
        with ctx.store.session.begin() as s:  # ... and then nothing for a long while
            s.get(Job, job.id).updated_at = time.time() - settings.heartbeat_timeout_s - 60
        ctx.manager.tick()
        assert ctx.store.get_job(job.id).error.startswith(f"interrupted: {OTHER_HOST} stopped answering")
    finally:
        bystander.kill()


@pytest.mark.slow
def test_a_manager_holding_a_job_keeps_it_alive_for_managers_elsewhere(ctx, settings):
    """The real thing, with a short timeout: while its holder ticks, a manager on another
    machine leaves the job alone; once the holder stops, that manager ends it."""
    fast = settings.model_copy(update={"heartbeat_timeout_s": 3.0})
    here = JobManager(fast, ctx.store, ctx.pools)
    elsewhere = JobManager(fast, ctx.store, ctx.pools)
    elsewhere.host = OTHER_HOST
    elsewhere.owner = {"owner_pid": elsewhere.pid, "owner_host": OTHER_HOST}
    job = make_job(ctx, "sleep")
    here_ctx = type(ctx)(fast, ctx.store, here)
    tick_until(here_ctx, job.id, {"running"})
    try:
        for _ in range(4):  # the holder beats as it ticks; the other manager sees it alive
            here.tick()
            elsewhere.tick()
            assert ctx.store.get_job(job.id).status == Status.RUNNING
            time.sleep(0.2)
        # The holder stops ticking (its machine froze): the other manager ends the job.
        ended = wait_for(lambda: (elsewhere.tick(), ctx.store.get_job(job.id))[1].status.is_final
                         and ctx.store.get_job(job.id), timeout=60)
        assert ended.status == Status.FAILED and f"{here.host} stopped answering" in ended.error
        # The holder, back, stops the process it ran for the job: it must not run twice.
        proc = here.process(job.id)
        here.tick()
        assert proc is not None and proc.wait(timeout=30) is not None
        assert here.process(job.id) is None
    finally:
        proc = here.process(job.id)
        if proc is not None:
            proc.kill()
