"""A real multi-host cluster: three hosts built from Linux network namespaces (each with its own
host name, which no resolver knows) on one bridge, Ray started with its own ``ray start`` CLI (a
head with no CPUs, two workers of one CPU), and a trainyard server on the head's host.

Checks what a new user's cluster meets first: a 1-worker and a 2-worker job on two hosts with
the losses of one local process (no network settings by hand: gloo is told each host's
interface by the launcher), a host killed mid-epoch failing its job naming the host, and the
head killed and started again while the server serves throughout (503 naming RAY_ADDRESS while
it is gone, the nodes again once it is back).

Needs root and ``ip netns`` (CI runs as root); skips with the reason elsewhere. Traffic goes only
to the namespaces' own addresses (10.231.0.0/24) and the bridge's. Every loop is bounded; the
namespaces, the bridge and every process started here are removed in a finalizer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import psutil
import pytest

from tests.cluster.test_cluster_jobs import TOLERANCE, spec
from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset, metrics, one_thread, write_job
from trainyard.jobs.context import open_context
from trainyard.jobs.job_documents import job_detail
from trainyard.jobs.resources import Pools
from trainyard.settings import Settings
from trainyard.training.run import main as train_in_process

pytestmark = pytest.mark.slow
SUBNET = "10.231.0"
TAG = f"ty{os.getpid() % 100000}"  # names of this run's namespaces and links (<= 15 characters)
HOSTS = {"head": 1, "w1": 2, "w2": 3}  # host -> last byte of its address
HEAD = f"{SUBNET}.1"
RAY_ADDRESS = f"{HEAD}:6379"
SERVER = f"http://{HEAD}:5000"
RAY = Path(sys.executable).with_name("ray")
SRC = Path(__file__).resolve().parents[2] / "src"
TOKEN = "netns-test-token"  # a server beyond localhost wants one


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed"
    probe = f"{TAG}probe"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"`ip netns add` does not work here: {getattr(exc, 'stderr', b'') or exc}"
    return None


def _host_environment() -> dict[str, str]:
    """This process's environment for a process on a namespace host, less the cluster_utils
    tests' RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (tests/cluster/conftest.py sets it for the whole
    session): with it, ``ray start`` refuses to join a head on another address."""
    return {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}


class Hosts:
    """The namespaces, the bridge and the processes (each in a session of its own) run in them."""

    def __init__(self, root: Path):
        self.root, self.procs = root, {}

    def build(self) -> None:
        bridge = f"{TAG}br"
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{SUBNET}.254/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for host, last in HOSTS.items():
            ns, outer, inner = self.ns(host), f"{TAG}{last}o", f"{TAG}{last}i"
            _ip("netns", "add", ns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            _ip("link", "set", inner, "netns", ns)
            _ip("link", "set", outer, "master", bridge, "up")
            _ip("netns", "exec", ns, "ip", "addr", "add", f"{SUBNET}.{last}/24", "dev", inner)
            _ip("netns", "exec", ns, "ip", "link", "set", inner, "up")
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")

    @staticmethod
    def ns(host: str) -> str:
        return f"{TAG}-{host}"

    def start(self, name: str, host: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        """``command`` on ``host`` (its namespace, host name ``ty-HOST``), in a session of its own."""
        shell = f"hostname ty-{host} && exec " + " ".join(f"'{c}'" for c in command)
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns(host), "unshare", "--uts", "sh", "-c", shell],
                                env={**_host_environment(), **env}, start_new_session=True,
                                stdout=(self.root / f"{name}.txt").open("ab"), stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL every process of ``name``'s session (a host's Ray: raylet, workers, ranks)."""
        proc = self.procs.pop(name)
        members = [p for p in psutil.process_iter() if _sid(p.pid) == proc.pid]
        for member in members:
            try:
                member.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(members, timeout=20)
        proc.wait(timeout=20)

    def remove(self) -> None:
        for name in list(self.procs):
            self.kill(name)
        for host in HOSTS:
            subprocess.run(["ip", "netns", "del", self.ns(host)], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", f"{TAG}br"], capture_output=True, timeout=30)


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def ray_start(hosts: Hosts, host: str, tries: int = 3) -> None:
    """``ray start`` on ``host``, until it says it started (Ray gives a node 30 s, which a loaded
    machine can miss: then again, ``tries`` times)."""
    common = ["--block", "--disable-usage-stats", f"--node-ip-address={SUBNET}.{HOSTS[host]}",
              "--object-store-memory=100000000"]
    if host == "head":
        command = [str(RAY), "start", "--head", "--port=6379", "--num-cpus=0", "--include-dashboard=false", *common]
    else:
        command = [str(RAY), "start", f"--address={RAY_ADDRESS}", "--num-cpus=1", *common]
    log = hosts.root / f"ray-{host}.txt"
    for _ in range(tries):
        before = log.stat().st_size if log.exists() else 0
        proc = hosts.start(f"ray-{host}", host, command,
                           {"PYTHONPATH": str(SRC), "RAY_agent_register_timeout_ms": "120000"})
        if _started(proc, log, before):
            return
        hosts.kill(f"ray-{host}")
    raise AssertionError(f"ray start on {host} failed {tries} times: {log.read_text()[-2000:]}")


def get(path: str, timeout: float = 10):
    request = urllib.request.Request(SERVER + path, headers={"Authorization": f"Bearer {TOKEN}"})
    return urllib.request.urlopen(request, timeout=timeout)


def _started(proc: subprocess.Popen, log: Path, offset: int, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if "Ray runtime started" in log.read_text(errors="replace")[offset:]:
            return True
        time.sleep(0.5)
    return False


def system(timeout: float = 10):
    """(status, document) of GET /api/system on the server; (None, None) if it does not answer."""
    try:
        with get("/api/system", timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except OSError:
        return None, None


def alive_hosts() -> list[str] | None:
    status, doc = system()
    return sorted(n["host"] for n in doc["nodes"] if n["alive"]) if status == 200 else None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = _why_not()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("netns")
    hosts = Hosts(root)
    try:
        hosts.build()
        for host in HOSTS:
            ray_start(hosts, host)
        settings = Settings(home=root / "home", data_roots=[root], cluster="ray")
        hosts.start("server", "head", [sys.executable, "-m", "trainyard.cli.main", "serve", "--host", HEAD,
                                       "--port", "5000"],
                    {"PYTHONPATH": str(SRC), "TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(root),
                     "TRAINYARD_CLUSTER": "ray", "RAY_ADDRESS": RAY_ADDRESS, "OMP_NUM_THREADS": "1",
                     "TRAINYARD_AUTH_TOKEN": TOKEN,
                     "RAY_USAGE_STATS_ENABLED": "0"})
        assert wait_for(lambda: alive_hosts() == ["ty-head", "ty-w1", "ty-w2"], 150), (system(), root)
        yield hosts, open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[])), root
    finally:
        hosts.remove()


def queue(ctx, model_spec_, name):
    """A job row the server (not this process: it never ticks) starts on the cluster."""
    needs = {"pool": "cluster", "device": "cpu", "count": model_spec_.cluster.workers}
    return ctx.manager.create("model", name, model_spec_.model_dump(mode="json"), needs=needs)


def final(ctx, job_id, timeout=180):
    return wait_for(lambda: (j := ctx.store.get_job(job_id)).status in ("done", "failed", "aborted") and j, timeout)


def test_jobs_on_two_hosts_match_one_process_a_lost_host_fails_its_job_and_the_head_comes_back(cluster, tmp_path):
    hosts, ctx, root = cluster
    dataset = make_dataset(root / "stripes", train=48, val=12, size=16)
    one = queue(ctx, spec(dataset, workers=1, batch_size=8, epochs=2), "one")
    two = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=2), "two")
    for job, workers in ((one, 1), (two, 2)):
        job = final(ctx, job.id)
        assert job.status == "done", job.error
        folder = ctx.manager.folder(job.id).path
        reference = write_job(tmp_path / f"ref-{workers}", spec(dataset, workers=0, batch_size=8 * workers, epochs=2))
        with one_thread():
            assert train_in_process(reference) == 0
        for name in ("train_loss", "val_loss", "val_accuracy"):
            ours, theirs = metrics(folder, name), metrics(reference, name)
            assert [e for e, _ in ours] == [e for e, _ in theirs], name
            assert np.allclose([v for _, v in ours], [v for _, v in theirs], rtol=0, atol=TOLERANCE), (name, ours)
    workers = job_detail(ctx.manager, ctx.store.get_job(two.id))["workers"]
    assert sorted(w["host"] for w in workers) == ["ty-w1", "ty-w2"]  # one rank on each worker host

    long = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=500), "long")
    events = ctx.manager.folder(long.id).events
    wait_for(lambda: events.exists() and '"type":"metric"' in events.read_text(), 180)
    hosts.kill("ray-w2")  # the host's Ray and everything on it, mid-epoch
    lost = final(ctx, long.id, timeout=90)
    assert lost.status == "failed" and "ty-w2" in lost.error, lost.error

    hosts.kill("ray-head")
    killed = time.monotonic()
    status, doc = wait_for(lambda: (r := system())[0] == 503 and r, 60)
    assert f"RAY_ADDRESS={RAY_ADDRESS}" in doc["detail"]
    while time.monotonic() - killed < 70:  # past the minute after which Ray ends a driver's process
        with get("/api/jobs") as response:
            assert response.status == 200  # the server serves on
        assert system()[0] == 503
        time.sleep(5)
    assert hosts.procs["server"].poll() is None
    ray_start(hosts, "head")
    ray_start(hosts, "w2")
    assert wait_for(lambda: (h := alive_hosts()) and "ty-head" in h and "ty-w2" in h, 150), system()
    assert hosts.procs["server"].poll() is None  # the same server, never restarted
