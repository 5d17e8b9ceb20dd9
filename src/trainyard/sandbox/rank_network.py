"""What a rank of a multi-node cluster job may reach on the network: its own job's peer ranks only.

A local job's processes share a network namespace that has loopback only (sandbox/namespaces.py).
A cluster rank cannot: its peers are on other machines, at its node's address, so it keeps its
node's network namespace, where the server's API, Ray's GCS and raylets and PostgreSQL are
reachable too. The kernel's own tools close that:

- **a uid of its own job and a group of its own rank**: as root, the rank's processes drop to
  `job_uid` (from the reserved range ``TRAINYARD_RANK_UID_BASE``..+65536, one per job, the same
  on every node so that the shared job folder is theirs), not to the nobody every other sandbox
  shares, and to `rank_gid` (one per rank on its node, so that two ranks of one job on one node
  are held and locked apart);
- **an nftables table per rank** (Debian's ``nftables``), installed by the rank's supervisor
  (sandbox/supervisor.py, root, outside the sandbox) before the rank starts and deleted when it
  ends, whose output chain matches ``meta skgid`` of that group: packets of connections already
  made pass; new TCP connections go only to the job's peer nodes' addresses (the rendezvous and
  gloo's listeners, whose ports are chosen at run time, so addresses are all that can be named
  beforehand), and nothing else (UDP, other hosts) leaves;
- **then locked**: once its process group has formed (training/distributed.py, before any of the
  user's code is imported), the rank asks its supervisor over an inherited socket to drop the
  peers' rule; from then on its processes can use only the connections of the process group (to
  its peers' rendezvous and gloo ports) and open none, so the API, the GCS, a raylet or
  PostgreSQL on a peer's address are refused as well. A rank that never asks is locked anyway
  once the process group's join deadline has passed. Any message locks: the rank's code can only
  make its own rules stricter.

Why not a network namespace per rank with a veth: its peers must reach it at an address the
other nodes route to, which means NAT or routing changes on every node; rules on the rank's own
group leave the node's network as it is. Needs root and ``nft`` on the rank's node; elsewhere `unavailable_reason`
says why, the server reports it (``trainyard system --json``) and the rank runs with its node's
network, as before. Torch-free.
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import socket
import subprocess
import sys
import time
import zlib
from typing import Any

from trainyard.core import environment

UID_BASE_SETTING = "TRAINYARD_RANK_UID_BASE"
DEFAULT_UID_BASE = 1 << 30  # far above any account's uid and Debian's subuid ranges (100000+)
UID_SPAN = 1 << 16
PEERS_VARIABLE = "TRAINYARD_RANK_PEERS"  # the job's nodes' addresses, set by the launcher (cluster/attempt.py)
LOCK_FD_VARIABLE = environment.RANK_LOCK_FD_VARIABLE  # the rank's end of the socket to its supervisor
LOCK_WAIT_S = 30.0
# A rank that has not asked by then is locked anyway: its process group's join (training/
# distributed.py, TRAINYARD_JOIN_TIMEOUT_S) has failed or formed by that time.
LOCK_DEADLINE_S = environment.join_timeout_s(180) + 60


def job_uid(job_id: str) -> int:
    """The uid a cluster job's ranks run as, the same on every node (the job folder is shared).

    A hash, so two jobs in 65,536 pairs share one. That is harmless: what keeps jobs apart is
    the mount namespace (a rank's root holds no other job's folder, bench/security/adversary_isolation.py's
    "uid twin"), its processes are counted by tree and cgroup, and its network rules name its
    rank's own group (`rank_gid`); the uid only owns the job's work folder."""
    base = environment.rank_uid_base(DEFAULT_UID_BASE)
    return base + zlib.crc32(job_id.encode()) % UID_SPAN


def rank_gid(supervisor: int) -> int:
    """The group one rank's processes run in: its own among every rank on this node (its
    supervisor's pid is unique here), so that two ranks of one job on one node (one uid) are
    held and locked apart."""
    base = environment.rank_uid_base(DEFAULT_UID_BASE)
    return base + UID_SPAN + supervisor  # above the uids; a pid is below 2**22


def unavailable_reason() -> str | None:
    """Why this machine cannot hold a rank to its peers; None when it can."""
    if os.geteuid() != 0:
        return "not root: a rank cannot be given a uid of its own nor filtered by nftables"
    return _probe()


@functools.cache
def _probe() -> str | None:
    path = shutil.which("nft")
    if path is None:
        return "nftables (nft) is not installed"
    try:
        probe = subprocess.run([path, "list", "tables"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nft cannot run: {exc}"
    if probe.returncode != 0:
        return f"nft cannot list tables here: {(probe.stderr.strip().splitlines() or ['no message'])[-1]}"
    return None


class RankFilter:
    """The nftables table that holds the processes of group ``gid`` (one rank's) to ``peers``."""

    def __init__(self, gid: int, peers: list[str]):
        self.gid = gid
        self.table = f"trainyard_rank_{gid}"
        self.peers4 = sorted({p for p in peers if _family(p) == socket.AF_INET})
        self.peers6 = sorted({p for p in peers if _family(p) == socket.AF_INET6})

    def install(self) -> None:
        """Replace whatever an earlier rank of this group left (a killed supervisor) with the
        rendezvous rules; CalledProcessError (with nft's message) when nft refuses."""
        self._nft(f"add table inet {self.table}\ndelete table inet {self.table}\n"
                  f"table inet {self.table} {{\n  chain output {{\n"
                  "    type filter hook output priority 0; policy accept;\n"
                  f"{self._rules(locked=False)}  }}\n}}\n")

    def lock(self) -> None:
        """From now on: the connections made so far, and no new one."""
        self._nft(f"flush chain inet {self.table} output\n"
                  + "".join(f"add rule inet {self.table} output {rule.strip()}\n"
                            for rule in self._rules(locked=True).splitlines()))

    def remove(self) -> None:
        subprocess.run(["nft", "delete", "table", "inet", self.table], capture_output=True, timeout=30)

    def _rules(self, locked: bool) -> str:
        rules = [f"meta skgid != {self.gid} accept", "ct state established,related accept"]
        if not locked:
            if self.peers4:
                rules.append(f"meta l4proto tcp ip daddr {{ {', '.join(self.peers4)} }} accept")
            if self.peers6:
                rules.append(f"meta l4proto tcp ip6 daddr {{ {', '.join(self.peers6)} }} accept")
        # refused at once: connect() gets ECONNREFUSED, a datagram EPERM (no timeout to wait out)
        rules += ["meta l4proto tcp counter reject with tcp reset", "counter drop"]
        return "".join(f"    {rule}\n" for rule in rules)

    @staticmethod
    def _nft(script: str) -> None:
        done = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, "nft", done.stdout, done.stderr)


class Guard:
    """A supervisor's hold on its rank's network: the table installed, the socket the rank asks
    over (its end inherited by the rank, named in the environment), the lock done when asked or
    at the deadline, the table removed at the end."""

    def __init__(self, gid: int, peers: list[str]):
        self.filter = RankFilter(gid, peers)
        self.filter.install()
        self._ours, self._theirs = socket.socketpair()
        self._theirs.set_inheritable(True)
        os.environ[LOCK_FD_VARIABLE] = str(self._theirs.fileno())
        self.deadline = time.monotonic() + LOCK_DEADLINE_S
        self.locked = False

    @classmethod
    def start(cls, policy: Any, supervisor: int) -> Guard | None:
        """The guard of the rank ``policy`` confines (None: not a cluster rank, nothing to hold),
        giving it a group of its own (`rank_gid`); None with a warning in the rank's output where
        this node cannot hold it. Raises CalledProcessError when nft refuses the table (the rank
        must not start unfiltered)."""
        if policy.peers is None:
            return None
        why = unavailable_reason() or (None if policy.uid is not None
                                       else "no uid of its own (not root, or no namespaces)")
        if why:
            print(f"trainyard: this rank keeps its node's network ({why})", file=sys.stderr, flush=True)
            return None
        policy.gid = rank_gid(supervisor)
        return cls(policy.gid, policy.peers)

    def started(self) -> None:
        """In the supervisor once the rank is forked: its end of the socket is the rank's alone."""
        self._theirs.close()
        os.environ.pop(LOCK_FD_VARIABLE, None)

    def check(self) -> None:
        """Lock when the rank asked (any message, or its end closed) or the deadline passed."""
        if self.locked:
            return
        asked = bool(select.select([self._ours], [], [], 0)[0])
        if asked or time.monotonic() > self.deadline:
            self.filter.lock()
            self.locked = True
            try:
                self._ours.sendall(b"locked\n")
            except OSError:
                pass  # the rank is gone, or closed its end: locked all the same

    def close(self) -> None:
        if environment.rank_lock_fd() == str(self._theirs.fileno()):
            os.environ.pop(LOCK_FD_VARIABLE)  # never started: no later child may inherit a closed fd
        self._theirs.close()
        self._ours.close()
        self.filter.remove()


def _family(address: str) -> int | None:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, address)
            return family
        except OSError:
            continue
    return None


def lock_network() -> None:
    """In a rank, once its process group has formed and before any user code: ask the
    supervisor to lock this rank's network, and wait until it has (a rank without a supervisor's
    socket, a local job's or an unconfined one's, has nothing to do)."""
    fd = environment.take_rank_lock_fd()
    if not fd:
        return
    try:
        with socket.socket(fileno=int(fd)) as channel:
            channel.settimeout(LOCK_WAIT_S)
            channel.sendall(b"lock\n")
            answer = channel.recv(64)
    except OSError as exc:
        raise RuntimeError(f"the sandbox could not lock this rank's network: {exc}") from exc
    if not answer.startswith(b"locked"):
        raise RuntimeError(f"the sandbox could not lock this rank's network: {answer.decode(errors='replace')}")
