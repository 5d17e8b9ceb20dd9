"""Several managers on one database (two servers on PostgreSQL; a server and CLIs on SQLite): real
processes race to start the same queued jobs, and each job runs exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import wait_for
from trainyard.jobs.kinds.registry import JobKind, register_kind
from trainyard.jobs.runs.manager import JobManager
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.store import Job, Store

REPO = Path(__file__).resolve().parents[2]

# The job notes every start in runs.txt (O_APPEND: concurrent starts cannot hide each other).
ONCE = """
import os, sys
from trainyard.core.events import EventWriter
w = EventWriter(sys.argv[1])
w.status("running")
with open(os.path.join(sys.argv[1], "runs.txt"), "a") as f:
    f.write(f"{os.getpid()}\\n")
w.status("done")
"""


@dataclass(frozen=True)
class OnceKind(JobKind):
    def command(self, folder, gpu_ids):
        return [sys.executable, "-c", ONCE, str(folder.work)]


register_kind(OnceKind("test-once", "", lambda job, folder: {}))

# One "server" (or a CLI): its own manager ticking until every job has ended. Eight CPU slots, so that
# slots never serialise the racers: only the claim of the job can.
RACER = """
import sys, time
from pathlib import Path
import tests.jobs.test_shared_store  # registers the job kind
from trainyard.core.status import Status
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
ctx = open_context(pools=Pools(1, 8, []))
go = Path(sys.argv[1])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.005)
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    ctx.manager.tick()
    if all(Status(j.status).is_final for j in ctx.store.list_jobs()):
        break
    time.sleep(0.02)
"""


def test_racing_managers_in_separate_processes_start_each_queued_job_once(ctx, cli_env, tmp_path):
    jobs = [ctx.manager.create("test-once", f"once {i}", {}, needs={"pool": "cpu"}) for i in range(8)]
    go = tmp_path / "go"
    env = {**os.environ, **cli_env,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for racer in racers:
        assert racer.stdout.readline().strip() == "ready", racer.stderr.read()[-2000:]
    go.touch()
    for racer in racers:
        _, errors = racer.communicate(timeout=120)
        assert racer.returncode == 0, errors[-2000:]
    for job in jobs:
        runs = (ctx.manager.folder(job.id).work / "runs.txt").read_text().split()
        history = [h.status for h in ctx.store.history(job.id)]
        assert len(runs) == 1, f"{job.id} ran {len(runs)} times"
        assert history.count("running") == 1 and ctx.store.get_job(job.id).status == "done", history
    assert ctx.store.leases() == {}


def test_only_one_of_two_managers_acting_on_the_same_read_changes_the_job(ctx, settings):
    """The compare-and-set under the claim: both read the job queued; the second one loses."""
    job = ctx.manager.create("test-once", "once", {}, needs={"pool": "cpu"})
    seen_by_a, seen_by_b = ctx.store.get_job(job.id), ctx.store.get_job(job.id)
    assert ctx.store.update_job_if(seen_by_a, status="running", owner_pid=1)
    assert not ctx.store.update_job_if(seen_by_b, status="running", owner_pid=2)
    assert not ctx.store.update_job_if(seen_by_b, status="waiting", status_detail="waiting for GPUs")
    assert (ctx.store.get_job(job.id).status, ctx.store.get_job(job.id).owner_pid) == ("running", 1)
    assert [h.status for h in ctx.store.history(job.id)] == ["queued", "running"]


def test_a_manager_that_lost_the_claim_frees_only_its_own_leases(ctx, settings):
    job = ctx.manager.create("test-once", "once", {}, needs={"pool": "cpu"})
    stale = ctx.store.get_job(job.id)
    other = JobManager(settings, Store(settings.db_url), Pools(1, 2, []))
    other.tick()  # another server starts it on cpu:0
    assert ctx.store.leases() == {"cpu:0": job.id}
    late = JobManager(settings, ctx.store, Pools(1, 2, []))
    assert ctx.store.try_lease(job.id, ["cpu:1"])
    late.starting.start(stale, ["cpu:1"])  # too late: the job is no longer queued
    assert ctx.store.leases() == {"cpu:0": job.id}
    wait_for(lambda: (other.tick(), ctx.store.get_job(job.id).status == "done")[1], 30)
    assert ctx.store.leases() == {}
    assert [h.status for h in ctx.store.history(job.id)] == ["queued", "running", "done"]


def test_names_of_any_length_are_stored(ctx):
    """PostgreSQL enforces VARCHAR lengths where SQLite never did: names are TEXT."""
    name = "a long name " * 50
    job = ctx.manager.create("test-once", name, {}, needs={"pool": "cpu"}, group=name)
    assert ctx.store.get_job(job.id).name == name


def test_the_tables_are_created_once_by_stores_opening_at_the_same_time(database_url):
    import threading

    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            Store(database_url)
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Store(database_url).list_jobs() == []


def test_a_job_row_round_trips_its_json_and_times(ctx):
    job = ctx.store.add_job(Job(id="20261130-000000-abcd", kind="model", name="n", status="queued",
                                needs={"pool": "gpu", "ids": [0, 3]}, summary={"best": {"epoch": 1.5}},
                                created_at=1764460800.123456))
    stored = ctx.store.get_job(job.id)
    assert stored.needs == {"pool": "gpu", "ids": [0, 3]} and stored.summary == {"best": {"epoch": 1.5}}
    assert stored.created_at == 1764460800.123456  # a double, not a 4-byte float


def test_a_job_running_on_another_machine_is_neither_adopted_nor_signalled_from_here(ctx, settings):
    """Its pids mean nothing here: its server there watches it, and stops it when asked to."""
    job = ctx.manager.create("test-once", "remote", {}, needs={"pool": "cpu"})
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # Here, the job's pid belongs to an unrelated process, and its server's pid to none.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    ctx.store.update_job(job.id, status="running", pid=bystander.pid, started_at=time.time(),
                         owner_pid=gone.pid, owner_host="another-machine")
    ctx.manager.tick()
    assert ctx.store.get_job(job.id).owner_host == "another-machine"
    assert ctx.manager.abort(job.id).status == "running"  # asked for, not done from here
    assert bystander.poll() is None

    there = JobManager(settings, ctx.store, ctx.pools)  # that machine's server
    there.pid, there.host = gone.pid, "another-machine"
    there.owner = {"owner_pid": there.pid, "owner_host": there.host}
    wait_for(lambda: (there.tick(), ctx.store.get_job(job.id).status == "aborted")[1], 30)
    assert bystander.wait(timeout=10) is not None and ctx.store.leases() == {}


def test_a_store_made_by_an_older_trainyard_gains_the_new_columns(database_url):
    from sqlalchemy import text

    Store(database_url)
    with Store(database_url).engine.begin() as connection:
        connection.execute(text("ALTER TABLE jobs DROP COLUMN owner_host"))
    store = Store(database_url)
    store.add_job(Job(id="j1", kind="model", name="n", status="queued", needs={}, summary={}, owner_host="h"))
    assert store.get_job("j1").owner_host == "h"


def test_a_plain_postgresql_url_needs_no_driver_name(postgres):
    """SQLAlchemy would pick psycopg2, which trainyard does not install; psycopg (3) is used."""
    url = postgres.new_database().replace("postgresql+psycopg://", "postgresql://")
    assert Store(url).list_jobs() == []
