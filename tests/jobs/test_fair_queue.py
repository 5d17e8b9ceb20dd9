"""Sharing between users: a sweep of one user does not starve another's single job, and a
user at their quota waits, saying why."""

from __future__ import annotations

from trainyard.core.ownership import Actor
from trainyard.core.status import Status
from trainyard.jobs.accounts import users
from trainyard.jobs.scheduling.fairness import fair_order, over_quota
from trainyard.jobs.store.actor import acting
from trainyard.jobs.store.store import Job


def job(job_id: str, owner: str | None, age: float, status: Status = Status.QUEUED) -> Job:
    return Job(id=job_id, kind="model", name=job_id, status=status, owner=owner, created_at=1000.0 + age,
               needs={"pool": "cpu"}, summary={}, pid=1 if status == Status.RUNNING else None)


def test_a_late_single_job_goes_before_the_rest_of_a_sweep():
    sweep = [job(f"a{i}", "alice", i) for i in range(64)]
    late = job("b0", "bob", 100)
    order = [j.id for j in fair_order([*sweep, late])]
    assert order[:4] == ["a0", "b0", "a1", "a2"]
    assert len(order) == 65


def test_a_user_with_nothing_running_goes_first():
    running = [job("a-run", "alice", 0, Status.RUNNING)]
    queued = [job("a1", "alice", 1), job("a2", "alice", 2), job("b1", "bob", 3)]
    assert [j.id for j in fair_order([*running, *queued])] == ["a-run", "b1", "a1", "a2"]


def test_a_user_at_their_quota_waits_and_says_why(ctx):
    users.add_user(ctx.store, "alice", "member")
    users.set_quota(ctx.store, "alice", 1)
    with acting(Actor("alice", "member")):
        ctx.store.add_job(job("a-run", None, 0, Status.RUNNING))
        queued = ctx.store.add_job(job("a-next", None, 1))
    ctx.manager.starting.try_start(queued)
    waiting = ctx.store.get_job("a-next")
    assert waiting.status == Status.WAITING
    assert "alice" in waiting.status_detail and "1 of their 1" in waiting.status_detail
    users.set_quota(ctx.store, "alice", 0)  # no cap: nothing holds it back but the machine
    assert over_quota(ctx.store, waiting, ctx.settings.user_max_jobs) is None


def test_the_servers_default_quota_applies_to_users_without_their_own(ctx):
    users.add_user(ctx.store, "bob", "member")
    with acting(Actor("bob", "member")):
        for i in range(2):
            ctx.store.add_job(job(f"b{i}", None, i, Status.RUNNING))
        ctx.store.add_job(job("b-next", None, 5))
    assert over_quota(ctx.store, ctx.store.get_job("b-next"), 2) is not None
    assert over_quota(ctx.store, ctx.store.get_job("b-next"), 3) is None
    assert over_quota(ctx.store, ctx.store.get_job("b-next"), 0) is None
