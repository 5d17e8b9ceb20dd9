"""Per-user quotas beyond running jobs: a user at their GPU or CPU-slot quota waits, saying why,
while another user's job starts; a user at their disk quota cannot make a new dataset or model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import wait_for
from trainyard.core.ownership import Actor
from trainyard.core.status import Status
from trainyard.jobs.accounts import audit, users
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.quotas import OverQuota, over_resource_quota
from trainyard.jobs.scheduling.resources import Pools, fake_gpus
from trainyard.jobs.store.actor import acting
from trainyard.jobs.store.store import Job


def job(job_id: str, owner: str, needs: dict, status: Status = Status.QUEUED, kind: str = "model") -> Job:
    return Job(id=job_id, kind=kind, name=job_id, status=status, owner=owner, created_at=1000.0,
               needs=needs, summary={}, pid=1 if status == Status.RUNNING else None)


@pytest.fixture
def machine(settings):
    """Two users on a machine with two (fake) GPUs and two CPU slots; started jobs are recorded,
    not launched (what starts is the question here, not how)."""
    ctx = open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=2, gpus=fake_gpus(2)))
    for name in ("alice", "bob"):
        users.add_user(ctx.store, name, "member")
    started: list[str] = []
    ctx.manager.starting.start = lambda queued, resources, foreground=False: started.append(queued.id)
    return ctx, started


def running(ctx, job_id: str, owner: str, resource: str) -> None:
    """A running job of ``owner``'s holding ``resource``."""
    ctx.store.add_job(job(job_id, owner, {"pool": resource.split(":")[0]}, Status.RUNNING))
    assert ctx.store.try_lease(job_id, [resource])


@pytest.mark.parametrize(("needs", "held", "quota", "words"), [
    ({"pool": "gpu", "count": 1}, "gpu:0", {"max_gpus": 1}, "user alice is using 1 of 1 GPU"),
    ({"pool": "cpu"}, "cpu:0", {"max_cpu_slots": 1}, "user alice is using 1 of 1 CPU slot"),
])
def test_a_user_at_their_quota_waits_while_another_users_job_starts(machine, needs, held, quota, words):
    ctx, started = machine
    users.set_quota(ctx.store, "alice", **quota)
    running(ctx, "a-run", "alice", held)
    ctx.store.add_job(job("a-next", "alice", needs))
    ctx.store.add_job(job("b-next", "bob", needs))
    for queued in ("a-next", "b-next"):
        ctx.manager.starting.try_start(ctx.store.get_job(queued))
    waiting = ctx.store.get_job("a-next")
    assert waiting.status == Status.WAITING and waiting.status_detail == f"waiting: {words}"
    assert started == ["b-next"]  # the machine had room: only alice's quota held hers back
    ctx.store.release("a-run")  # alice's running job ended
    ctx.manager.starting.try_start(ctx.store.get_job("a-next"))
    assert started == ["b-next", "a-next"]


def test_the_servers_default_gpu_quota_applies_to_users_without_their_own(machine):
    ctx, _ = machine
    ctx.settings = ctx.settings.model_copy(update={"user_max_gpus": 1})
    running(ctx, "b-run", "bob", "gpu:0")
    two = ctx.store.add_job(job("b-two", "bob", {"pool": "gpu", "count": 1}))
    blocked = over_resource_quota(ctx.store, two, ctx.settings)
    assert blocked is not None and "using 1 of 1 GPU" in blocked.reason
    users.set_quota(ctx.store, "bob", max_gpus=2)  # their own quota wins over the default
    assert over_resource_quota(ctx.store, two, ctx.settings) is None
    users.set_quota(ctx.store, "bob", max_gpus=0)  # 0: no cap
    assert over_resource_quota(ctx.store, job("b-many", "bob", {"pool": "gpu", "count": 2}), ctx.settings) is None


def finished_dataset(ctx, job_id: str, owner: str, size: int) -> None:
    """A built dataset of ``owner``'s whose folder holds ``size`` bytes (never measured yet)."""
    folder = ctx.manager.folder(job_id)
    folder.create()
    (folder.path / "train.bin").write_bytes(b"x" * size)
    ctx.store.add_job(job(job_id, owner, {"pool": "dataset"}, Status.DONE, kind="dataset"))


def test_a_user_at_their_disk_quota_cannot_create_a_dataset_or_model(machine):
    ctx, _ = machine
    users.set_quota(ctx.store, "alice", max_disk_bytes=4096)
    finished_dataset(ctx, "a-data", "alice", 5000)
    with acting(Actor("alice", "member")):
        for kind in ("dataset", "model"):
            with pytest.raises(OverQuota, match=r"user alice is using 4\.9 KiB of a 4\.0 KiB disk quota"):
                ctx.manager.create(kind, "more", {}, needs={"pool": "cpu"})
    assert ctx.store.get_job("a-data").disk_bytes >= 5000  # measured once, then summed from the row
    refusals = [e for e in audit.entries(ctx.store).entries if e.action == "quota.refuse"]
    assert len(refusals) == 2 and refusals[0].user == "alice" and "4.9 KiB" in refusals[0].target
    with acting(Actor("bob", "member")):  # bob's quota is the default: none
        assert ctx.manager.create("dataset", "his", {}, needs={"pool": "dataset"}).owner == "bob"
    ctx.manager.delete("a-data")  # alice frees her disk: she may create again
    with acting(Actor("alice", "member")):
        assert ctx.manager.create("dataset", "again", {}, needs={"pool": "dataset"}).owner == "alice"


def test_an_ended_dataset_job_records_its_size(machine):
    ctx, _ = machine
    folder = ctx.manager.folder("b-data")
    folder.create()
    (folder.path / "images.bin").write_bytes(b"y" * 3000)
    ctx.store.add_job(job("b-data", "bob", {"pool": "dataset"}, Status.RUNNING, kind="dataset"))
    assert ctx.manager.finish(ctx.store.get_job("b-data"), Status.DONE, None)
    assert wait_for(lambda: (ctx.store.get_job("b-data").disk_bytes or 0) >= 3000)


def test_set_quota_and_list_json_show_the_quotas_with_usage(machine, monkeypatch):
    from trainyard.cli.main import app

    ctx, _ = machine
    monkeypatch.setenv("TRAINYARD_HOME", str(ctx.settings.home))
    monkeypatch.setenv("TRAINYARD_DATABASE_URL", ctx.settings.db_url)
    finished_dataset(ctx, "a-data", "alice", 2048)
    running(ctx, "a-run", "alice", "gpu:1")
    runner = CliRunner()
    result = runner.invoke(app, ["users", "set-quota", "alice", "--gpus", "2", "--cpu-slots", "1", "--disk", "1M"])
    assert result.exit_code == 0, result.output
    listed = json.loads(runner.invoke(app, ["users", "list", "--json"]).stdout)
    alice = next(user for user in listed if user["name"] == "alice")
    own = (alice["max_gpus"], alice["max_cpu_slots"], alice["max_disk_bytes"], alice["max_jobs"])
    assert own == (2, 1, 2**20, None)
    assert alice["usage"]["gpus"] == {"used": 1, "quota": 2}
    assert alice["usage"]["disk_bytes"]["used"] >= 2048 and alice["usage"]["jobs"]["used"] == 1
    bad = runner.invoke(app, ["users", "set-quota", "alice", "--disk", "lots"])
    assert bad.exit_code == 2 and "--disk 'lots'" in bad.output
    changes = [e.target for e in audit.entries(ctx.store).entries if e.action == "user.set-quota"]
    assert changes == ["alice:max_gpus=2,max_cpu_slots=1,max_disk_bytes=1048576"]
