"""Hosts built from Linux network namespaces for tests/cluster/test_netns_hosts.py: each its own
network and host name (which no resolver knows) on one bridge, with processes started in them
each in a session of its own, and Ray started there with its own ``ray start`` CLI.

Traffic goes only to the namespaces' own addresses (SUBNET.0/24) and the bridge's (BRIDGE, in
this machine's own namespace). Every wait is bounded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

# One per test run (10.231.1-250.0/24): two runs at once on one machine (CI, helpers) would
# otherwise both put the same address on their bridges, and one would reach the other's hosts.
SUBNET = f"10.231.{os.getpid() % 250 + 1}"
BRIDGE = f"{SUBNET}.254"  # this machine's own address on the bridge (PostgreSQL listens there)
TAG = f"ty{os.getpid() % 100000}"  # names of this run's namespaces and links (<= 15 characters)
HOSTS = {"head": 1, "w1": 2, "w2": 3}  # host -> last byte of its address
HEAD = f"{SUBNET}.1"
RAY_ADDRESS = f"{HEAD}:6379"
RAY = Path(sys.executable).with_name("ray")
SRC = Path(__file__).resolve().parents[2] / "src"
# How long a Ray process (raylet, driver: a server's agent, a launcher) goes on without the head
# before Ray ends it; 60 s by default, shortened so that a test of the head's loss can wait past it.
GCS_GONE_S = 20
RAY_ENV = {"PYTHONPATH": str(SRC), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_gcs_rpc_server_reconnect_timeout_s": str(GCS_GONE_S)}


def address(host: str) -> str:
    return f"{SUBNET}.{HOSTS[host]}"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def why_not() -> str | None:
    """Why namespaces cannot be built here, or None."""
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
        self._clear()  # an earlier module's hosts of this run (same names) that did not come down whole
        bridge = f"{TAG}br"
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{BRIDGE}/24", "dev", bridge)
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

    def cut(self, host: str, up: bool = False) -> None:
        """Take ``host``'s link to the bridge down (``up``: back up): its processes run on, unreachable."""
        _ip("link", "set", f"{TAG}{HOSTS[host]}o", "up" if up else "down")

    def signal(self, name: str, sig: int) -> None:
        """Send ``sig`` to every process of ``name``'s session (SIGSTOP freezes a server)."""
        for member in [p for p in psutil.process_iter() if _sid(p.pid) == self.procs[name].pid]:
            try:
                member.send_signal(sig)
            except psutil.Error:
                pass

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
            try:
                self.kill(name)
            except (subprocess.TimeoutExpired, psutil.Error):
                pass  # a process that would not go (a cut host's): its namespace goes all the same
        self._clear()

    def _clear(self) -> None:
        for host in HOSTS:
            subprocess.run(["ip", "netns", "del", self.ns(host)], capture_output=True, timeout=30)
        for last in HOSTS.values():  # a veth left in the root namespace (its peer's namespace gone)
            subprocess.run(["ip", "link", "del", f"{TAG}{last}o"], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", f"{TAG}br"], capture_output=True, timeout=30)


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def ray_start(hosts: Hosts, *names: str, tries: int = 3) -> None:
    """``ray start`` on each host of ``names``, one after another, until each says it started
    (Ray gives a node 30 s to register, which a loaded machine can miss, more so with several
    nodes and the servers starting at once: then again, ``tries`` times)."""
    for host in names:
        for _ in range(tries):
            proc, log, before = _ray_start_once(hosts, host)
            if _started(proc, log, before):
                break
            hosts.kill(f"ray-{host}")
        else:
            raise AssertionError(f"ray start on {host} failed {tries} times: "
                                 + (hosts.root / f"ray-{host}.txt").read_text()[-1500:])


def _ray_start_once(hosts: Hosts, host: str) -> tuple[subprocess.Popen, Path, int]:
    common = ["--block", "--disable-usage-stats", f"--node-ip-address={address(host)}",
              "--object-store-memory=100000000"]
    if host == "head":
        command = [str(RAY), "start", "--head", "--port=6379", "--num-cpus=0", "--include-dashboard=false", *common]
    else:
        command = [str(RAY), "start", f"--address={RAY_ADDRESS}", "--num-cpus=1", *common]
    log = hosts.root / f"ray-{host}.txt"
    before = log.stat().st_size if log.exists() else 0
    proc = hosts.start(f"ray-{host}", host, command, {**RAY_ENV, "RAY_agent_register_timeout_ms": "120000"})
    return proc, log, before


def _started(proc: subprocess.Popen, log: Path, offset: int, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if "Ray runtime started" in log.read_text(errors="replace")[offset:]:
            return True
        time.sleep(0.5)
    return False
