"""How many threads one rank of a job runs: its share of the CPUs it was granted, never the host's.

A rank's share is, in order of who knows best:

- on a cluster, the CPUs Ray assigned its worker (``RANK_CPUS_ENV``, set by the rank's actor
  from ``ray.get_runtime_context().get_assigned_resources()``): a node started with
  ``--num-cpus 1`` on a 64-core host gives each rank one CPU, not 64;
- the user's ``OMP_NUM_THREADS`` where set (per process, as OpenMP reads it);
- else the CPUs this process may use (affinity, cgroup quota: core/cpus.py) shared out between
  the ranks on this machine (LOCAL_WORLD_SIZE), and no more than the machine's idle CPUs at the
  start (its CPU count less its load average) allow: threads past the idle CPUs only wait on
  each other. `threads_note` says which it was, for the job's log.

torch.distributed.run sets OMP_NUM_THREADS=1 for every rank of a multi-process launch when the
user did not set it, so under it a value of 1 with several local ranks is read as unset: a user
who set 1 gets the fair share instead, which is what 1 was meant to avoid exceeding anyway.
"""

from __future__ import annotations

import math
import os

from trainyard.core import environment
from trainyard.core.cpus import granted_cpus, idle_cpus, omp_cpus

RANK_CPUS_ENV = environment.RANK_CPUS_VARIABLE  # the CPUs Ray assigned this rank's worker (a number)


def rank_threads(local_world: int = 1, environ: dict | os._Environ = os.environ) -> int:
    """Threads for torch in this rank (at least 1)."""
    granted = granted_cpus(use_omp=False)
    limit = granted
    assigned = _positive(environ.get(RANK_CPUS_ENV))
    if assigned is not None:
        limit = min(limit, max(1, math.floor(assigned)))
    omp = omp_cpus(environ)
    if omp is not None and _omp_is_torchrun_default(omp, local_world, environ):
        omp = None
    if omp is not None:
        return max(1, min(omp, limit))
    if assigned is not None:
        return limit
    idle = idle_cpus()
    if idle is not None:
        limit = min(limit, idle)
    return max(1, limit // max(1, local_world))


def threads_note(threads: int) -> str:
    """Where a job's thread count came from, said in its log: what it was granted, and the
    machine's load when it started."""
    parts = [f"{granted_cpus(use_omp=False)} CPU(s) granted"]
    try:
        parts.append(f"machine load {os.getloadavg()[0]:.1f} on {os.cpu_count() or 1} CPUs at the start")
    except (AttributeError, OSError):
        pass
    if omp_cpus() is not None:
        parts.append(f"OMP_NUM_THREADS={environment.omp_num_threads()}")
    return f"{threads} CPU thread{'s' * (threads != 1)} ({', '.join(parts)})"


def _omp_is_torchrun_default(omp: int, local_world: int, environ) -> bool:
    return omp == 1 and local_world > 1 and RANK_CPUS_ENV not in environ and "TORCHELASTIC_RUN_ID" in environ


def _positive(value: str | None) -> float | None:
    try:
        number = float(value) if value else None
    except ValueError:
        return None
    return number if number and number > 0 else None
