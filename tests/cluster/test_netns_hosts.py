"""A real multi-host cluster: three hosts built from Linux network namespaces (tests/cluster/netns.py)
on one bridge, Ray started with its own ``ray start`` CLI (a head with no CPUs, two workers of one
CPU), PostgreSQL on the bridge, and two trainyard servers on two hosts (the head's and a worker's)
sharing that database and one TRAINYARD_HOME, as a deployment of several machines would.

Checks what a new user's cluster meets first: a 1-worker and a 2-worker job on two hosts with
the losses of one local process (no network settings by hand: gloo is told each host's
interface by the launcher), both servers seeing every job, a job aborted from the server that
did not start it, a host killed mid-epoch failing its job naming the host, and the head killed
and started again while both servers serve throughout (503 naming RAY_ADDRESS while it is gone,
past the time after which Ray ends its processes, and the new head's node once it is back).
A job across two hosts without Ray (``--nnodes 2``) forms too, though no host name resolves.

Needs root and ``ip netns`` (CI runs as root) and PostgreSQL's binaries; skips with the reason
elsewhere. Traffic goes only to the namespaces' own addresses and the bridge's. Every loop is
bounded; the namespaces, the bridge, PostgreSQL and every process started here are removed in a
finalizer.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.cluster.netns import BRIDGE, GCS_GONE_S, RAY_ADDRESS, RAY_ENV, SUBNET, Hosts, address, ray_start, why_not
from tests.cluster.test_cluster_jobs import TOLERANCE, ray_worker_of, spec, training_processes
from tests.conftest import wait_for
from tests.postgres_server import Unavailable, start_server
from tests.training.model_helpers import make_dataset, metrics, one_thread, statuses, write_job
from trainyard.cluster.liveness import ALIVE_ANSWER_S, ANSWER_S
from trainyard.core.paths import JobFolder
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.views.documents import job_detail
from trainyard.settings import Settings
from trainyard.training.checkpoint_writer import HOLD_ENV
from trainyard.training.run import main as train_in_process

pytestmark = pytest.mark.slow
SERVERS = ("head", "w1")  # the hosts a trainyard server runs on
TOKEN = "netns-test-token"  # a server beyond localhost wants one
ALL = ["ty-head", "ty-w1", "ty-w2"]


def request(host: str, path: str, method: str = "GET", timeout: float = 10):
    """``path`` of the server on ``host``; the response (raises HTTPError for 4xx/5xx)."""
    url = f"http://{address(host)}:5000{path}"
    asked = urllib.request.Request(url, method=method, headers={"Authorization": f"Bearer {TOKEN}"})
    return urllib.request.urlopen(asked, timeout=timeout)


def system(host: str, timeout: float = 10):
    """(status, document) of GET /api/system on ``host``'s server; (None, None) if it does not answer."""
    try:
        with request(host, "/api/system", timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except OSError:
        return None, None


def alive_hosts(host: str) -> list[str] | None:
    status, doc = system(host)
    return sorted(n["host"] for n in doc["nodes"] if n["alive"]) if status == 200 else None


def listed(host: str) -> dict[str, str]:
    """Job id -> status, as ``host``'s server lists them."""
    with request(host, "/api/jobs") as response:
        return {j["id"]: j["status"] for j in json.loads(response.read())["jobs"]}


def start_servers(hosts: Hosts, settings: Settings) -> None:
    for host in SERVERS:
        hosts.start(f"server-{host}", host,
                    [sys.executable, "-m", "trainyard.cli.main", "serve", "--host", address(host), "--port", "5000"],
                    {**RAY_ENV, "TRAINYARD_HOME": str(settings.home),
                     "TRAINYARD_DATA_ROOTS": ",".join(map(str, settings.data_roots)),
                     "TRAINYARD_DATABASE_URL": settings.database_url, "TRAINYARD_CLUSTER": "ray",
                     "RAY_ADDRESS": RAY_ADDRESS, "OMP_NUM_THREADS": "1", "TRAINYARD_AUTH_TOKEN": TOKEN,
                     HOLD_ENV: str(hold_folder(settings))})  # no pause unless a test asks for one


def hold_folder(settings: Settings) -> Path:
    """Where a test asks the jobs' checkpoint writes to pause (training/checkpoint_writer.py's hook)."""
    folder = settings.home.parent / "hold"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = why_not()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("netns")
    hosts, database = Hosts(root), None
    try:
        hosts.build()
        try:  # on the bridge: every host reaches it, as a database server on the network
            database = start_server(host=BRIDGE, trusted=f"{SUBNET}.0/24")
        except Unavailable as exc:
            pytest.skip(f"two servers on one database need PostgreSQL: {exc}")
        ray_start(hosts, "head")
        settings = Settings(home=root / "home", data_roots=[root], cluster="ray", database_url=database.new_database())
        start_servers(hosts, settings)  # they start while the workers join (they wait for Ray)
        ray_start(hosts, "w1", "w2")
        assert wait_for(lambda: all(alive_hosts(h) == ALL for h in SERVERS), 150), ([system(h) for h in SERVERS], root)
        yield hosts, open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[])), root
    finally:
        hosts.remove()
        if database is not None:
            database.stop()


def queue(ctx, model_spec_, name):
    """A job row (as ``train --submit`` writes it) that one of the servers (not this process: it
    never ticks) starts on the cluster."""
    needs = {"pool": "cluster", "device": "cpu", "count": model_spec_.cluster.workers}
    return ctx.manager.create("model", name, model_spec_.model_dump(mode="json"), needs=needs)


def final(ctx, job_id, timeout=180):
    return wait_for(lambda: (j := ctx.store.get_job(job_id)).status in ("done", "failed", "aborted") and j, timeout)


def training(ctx, job_id, timeout=180):
    """The job once its ranks report a metric (they train on the cluster)."""
    events = ctx.manager.folder(job_id).events
    return wait_for(lambda: events.exists() and '"type":"metric"' in events.read_text() and ctx.store.get_job(job_id),
                    timeout)


def check_losses_of_one_process(folder, dataset, workers, tmp_path):
    """``folder``'s job, of ``workers`` ranks of batch 8, has the losses of one process of batch 8 x workers."""
    reference = write_job(tmp_path / f"ref-{workers}", spec(dataset, workers=0, batch_size=8 * workers, epochs=2))
    with one_thread():
        assert train_in_process(reference) == 0
    for name in ("train_loss", "val_loss", "val_accuracy"):
        ours, theirs = metrics(folder, name), metrics(reference, name)
        assert [e for e, _ in ours] == [e for e, _ in theirs], name
        assert np.allclose([v for _, v in ours], [v for _, v in theirs], rtol=0, atol=TOLERANCE), (name, ours)


@pytest.fixture(scope="module")
def dataset(cluster):
    return make_dataset(cluster[2] / "stripes", train=48, val=12, size=16)


def test_two_servers_share_the_cluster_jobs_match_one_process_and_abort_crosses_servers(cluster, dataset, tmp_path):
    hosts, ctx, root = cluster
    one = queue(ctx, spec(dataset, workers=1, batch_size=8, epochs=2), "one")
    victim = queue(ctx, spec(dataset, workers=1, batch_size=8, epochs=500), "victim")
    running = training(ctx, victim.id)  # beside "one": a CPU each
    assert running and running.status == "running", ctx.store.get_job(victim.id)
    two = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=2), "two")  # waits for both CPUs
    starter = running.owner_host
    assert starter in {f"ty-{h}" for h in SERVERS}, starter
    other = next(h for h in SERVERS if f"ty-{h}" != starter)
    with request(other, f"/api/jobs/{victim.id}/abort", method="POST", timeout=60) as response:
        assert response.status == 200  # the other server asks; the starter stops it
    assert final(ctx, victim.id, timeout=120).status == "aborted", ctx.store.get_job(victim.id)
    for job, workers in ((one, 1), (two, 2)):
        job = final(ctx, job.id)
        assert job.status == "done", job.error
        check_losses_of_one_process(ctx.manager.folder(job.id).path, dataset, workers, tmp_path)
    workers = job_detail(ctx.manager, ctx.store.get_job(two.id)).as_json()["workers"]
    assert sorted(w["host"] for w in workers) == ["ty-w1", "ty-w2"]  # one rank on each worker host
    for host in SERVERS:  # one database: each server shows every job as it ended
        assert {k: v for k, v in listed(host).items() if k in (one.id, two.id, victim.id)} == {
            one.id: "done", two.id: "done", victim.id: "aborted"}, host


def test_a_silent_worker_on_a_host_that_answers_is_waited_for_not_taken_for_lost(cluster, dataset):
    """A rank's Ray worker stopped past ANSWER_S (a worker starved of CPU looks like this), on a
    host still on the network: its job runs on, the launcher says once that it waits, and the
    rank trains on once the worker answers again."""
    hosts, ctx, root = cluster
    job = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=500), "slow-worker")
    assert training(ctx, job.id), ctx.store.get_job(job.id)
    folder = ctx.manager.folder(job.id)
    ranks = training_processes(folder.path)
    assert sorted(ranks) == [0, 1], ranks
    worker = ray_worker_of(ranks[1])
    worker.suspend()
    try:
        said = "has not answered for"
        assert wait_for(lambda: said in folder.output.read_text(errors="replace"), ANSWER_S + 60), \
            folder.output.read_text(errors="replace")[-2000:]
        assert ctx.store.get_job(job.id).status == "running"
    finally:
        worker.resume()
    line = next(line for line in folder.output.read_text().splitlines() if said in line)
    assert f"but its node answers: waiting up to {ALIVE_ANSWER_S:.0f} s" in line, line
    metrics_before = folder.events.read_text().count('"type":"metric"')
    assert wait_for(lambda: folder.events.read_text().count('"type":"metric"') > metrics_before, 120), \
        ctx.store.get_job(job.id)
    assert ctx.store.get_job(job.id).status == "running"
    assert "(restart " not in folder.log.read_text()  # trained on, not restarted as after a lost node
    with request("head", f"/api/jobs/{job.id}/abort", method="POST", timeout=60) as response:
        assert response.status == 200
    assert final(ctx, job.id, timeout=120).status == "aborted", ctx.store.get_job(job.id)


def test_a_job_on_two_hosts_without_ray_meets_across_them_though_no_host_name_resolves(cluster, dataset, tmp_path):
    """``trainyard train --nnodes 2`` on w1 and w2, one process each, meeting at w1's address: gloo
    binds to the interface towards node 0, not to the host name's address (ty-w1 resolves nowhere;
    gloo fell back to loopback and the ranks never met)."""
    hosts, _, root = cluster
    master = f"{address('w1')}:29400"
    jobs = {host: write_job(tmp_path / host, spec(dataset, workers=0, batch_size=8, processes=1, nnodes=2,
                                                  node_rank=rank, master=master, id=f"node{rank}"))
            for rank, host in enumerate(("w1", "w2"))}
    for host, job in jobs.items():
        command = get_kind("model").command(JobFolder(job), [])
        hosts.start(f"nodes-{host}", host, command, {**RAY_ENV, "OMP_NUM_THREADS": "1"})
    try:
        codes = {host: hosts.procs[f"nodes-{host}"].wait(timeout=300) for host in jobs}
    finally:
        for host in jobs:
            hosts.kill(f"nodes-{host}")
    assert codes == {"w1": 0, "w2": 0}, [(root / f"nodes-{h}.txt").read_text()[-2000:] for h in jobs]
    check_losses_of_one_process(jobs["w1"], dataset, 2, tmp_path)
    assert [s["status"] for s in statuses(jobs["w2"])] == ["running", "done"]  # node 1's own job says so
    assert not (jobs["w2"] / "checkpoints").exists()  # node 0 keeps the checkpoints


def test_a_lost_host_fails_its_job_and_both_servers_outlive_the_head(cluster, dataset):
    hosts, ctx, root = cluster
    long = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=500), "long")
    assert training(ctx, long.id), ctx.store.get_job(long.id)
    hosts.kill("ray-w2")  # the host's Ray and everything on it, mid-epoch
    lost = final(ctx, long.id, timeout=90)
    assert lost.status == "failed" and "ty-w2" in lost.error, lost.error

    hosts.kill("ray-head")
    killed = time.monotonic()
    assert wait_for(lambda: all(system(h)[0] == 503 for h in SERVERS), 60), [system(h) for h in SERVERS]
    for host in SERVERS:
        assert f"RAY_ADDRESS={RAY_ADDRESS}" in system(host)[1]["detail"], host
    while True:  # past the time after which Ray ends a driver (and a server's agent is one)
        for host in SERVERS:
            assert long.id in listed(host)  # each server serves on
            assert system(host)[0] == 503
        if time.monotonic() - killed > GCS_GONE_S + 10:
            break
        time.sleep(5)
    assert all(hosts.procs[f"server-{h}"].poll() is None for h in SERVERS)
    ray_start(hosts, "head")  # a new cluster: the workers' raylets gave up on the old head
    # Each server reconnects by itself and lists the new head's node.
    assert wait_for(lambda: all("ty-head" in (alive_hosts(h) or []) for h in SERVERS), 150), \
        [system(h) for h in SERVERS]
    assert all(hosts.procs[f"server-{h}"].poll() is None for h in SERVERS)  # the same servers, never restarted
