"""How many CPUs this process was granted: what a pool of decode threads or processes should use.

``os.cpu_count()`` is the machine's count, not this process's share. The share is the smallest
of: the CPUs the process may run on (``os.sched_getaffinity``: taskset, a scheduler's cpuset),
the cgroup's CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``: containers), and
``OMP_NUM_THREADS`` when a launcher set it to share a node's cores out between ranks. No torch,
no third-party imports: the build, the loader and a cluster launcher all ask here.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")


def affinity_cpus() -> int:
    """CPUs this process may be scheduled on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _own_cgroup() -> Path:
    """This process's cgroup v2 folder (``0::/path`` in /proc/self/cgroup), else the root."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = _CGROUP / line[3:].lstrip("/")
                if (own / "cpu.max").is_file():
                    return own
    except OSError:
        pass
    return _CGROUP


def cgroup_cpus(root: Path | None = None) -> float | None:
    """The cgroup's CPU quota in CPUs (e.g. 2.5), or None when there is no limit."""
    root = _own_cgroup() if root is None else root
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]  # v2: "max 100000" or "250000 100000"
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())  # v1: -1 is no limit
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def omp_cpus(environ: dict | os._Environ = os.environ) -> int | None:
    """OMP_NUM_THREADS as a positive count, or None when unset or not a number."""
    try:
        value = int(str(environ.get("OMP_NUM_THREADS", "")).split(",")[0])
    except ValueError:
        return None
    return value if value > 0 else None


def idle_cpus() -> int | None:
    """CPUs of the machine that are idle now: its count less its 1-minute load average, rounded,
    at least 1; None where the load is unknown. On a loaded machine a job that takes more threads
    than there are idle CPUs pays many times the CPU per step (issue 46: 8x with 2 threads on a
    busy 2-core machine), its threads waiting on each other's preempted work."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not Unix
        return None
    return max(1, round((os.cpu_count() or 1) - load))


def granted_cpus(use_omp: bool = True) -> int:
    """CPUs this process should keep busy: at least 1.

    ``use_omp=False`` ignores OMP_NUM_THREADS (torch.distributed.run sets it to 1 for every
    rank whatever the node has: a rank's decode threads should not shrink to one because of it).
    """
    counts: list[float] = [affinity_cpus()]
    quota = cgroup_cpus()
    if quota is not None:
        counts.append(quota)
    omp = omp_cpus() if use_omp else None
    if omp is not None:
        counts.append(omp)
    return max(1, math.floor(min(counts)))
