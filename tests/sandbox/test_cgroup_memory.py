"""Shared memory counts against a confined process's memory limit where this machine has a
writable cgroup hierarchy (sandbox/cgroups.py): a network check that fills its private tmpfs
(its /tmp: a check may not write /dev/shm, a training job may, and both are the same kind of
memory) and then a tensor, each under the limit but past it together, is stopped with an error
naming the limit and saying that shared memory counted, and leaves neither its cgroup nor its
files behind."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from bench.security.adversary_isolation import SHM_HOG as HOG
from bench.security.adversary_isolation import SHM_LIMIT_MB as LIMIT_MB

from trainyard.networks import check_network_isolated
from trainyard.networks.isolated import CHECKER
from trainyard.sandbox import cgroups
from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sandbox.status()["available"], reason="no sandbox here"),
              pytest.mark.skipif(cgroups.unavailable_reason() is not None,
                                 reason=f"no cgroup here: {cgroups.unavailable_reason()}")]


def groups_left() -> list[str]:
    tree = cgroups._probe()[0]
    assert tree is not None
    return [p.name for parent in tree.parents for p in Path(parent).iterdir() if p.name.startswith("child-")]


def test_a_check_holding_shared_memory_past_its_limit_is_stopped_naming_the_limit(monkeypatch):
    CHECKER.warm_up()  # as a server's is: started with its own limit, not the one set below
    monkeypatch.setenv("TRAINYARD_SANDBOX_MEMORY_MB", str(LIMIT_MB))
    before = groups_left()
    result = check_network_isolated(HOG, 2, 1, 4)
    assert not result["ok"]
    # Killed by the kernel at the tensor, the tmpfs counted with it (without a cgroup, RLIMIT_DATA
    # would refuse the tensor alone: torch's reservations count there, the tmpfs does not).
    assert f"{LIMIT_MB} MiB" in result["error"] and "shared memory included" in result["error"], result
    assert "TRAINYARD_SANDBOX_MEMORY_MB" in result["error"]
    assert groups_left() == before  # its cgroup went with it
    # Forked by the warm checker, its tmpfs was the checker's: its files went with it.
    checker = [p.pid for p in psutil.Process(CHECKER._proc.pid).children(recursive=True)] if CHECKER._proc else []
    assert not [pid for pid in checker for _ in Path(f"/proc/{pid}/root/tmp").glob("*/hog-*")]
