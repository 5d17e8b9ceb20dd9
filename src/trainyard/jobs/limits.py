"""How many data-parallel CPU processes a job may ask for: no more than can run at once.

``processes=100000`` used to be accepted and fail (or fork-bomb) at run time. Locally the cap
is the machine's CPU count; with ``TRAINYARD_CLUSTER=ray`` it is the cluster's CPUs when this
process is connected to Ray, else the spec's hard cap.
"""

from __future__ import annotations

import os

from trainyard.core.errors import InvalidInput
from trainyard.training.spec import MAX_PROCESSES


def max_processes() -> int:
    if os.environ.get("TRAINYARD_CLUSTER", "local") == "ray":
        return _ray_cpus() or MAX_PROCESSES
    return os.cpu_count() or 1


def _ray_cpus() -> int | None:
    try:
        import ray
    except ImportError:
        return None
    if not ray.is_initialized():
        return None  # connecting here would be a side effect of validating a request
    return int(ray.cluster_resources().get("CPU", 0)) or None


def check_processes(processes: int) -> None:
    limit = max_processes()
    if processes > limit:
        where = "the cluster has" if os.environ.get("TRAINYARD_CLUSTER") == "ray" else "this machine has"
        raise InvalidInput(f"processes={processes} is more than {where} CPUs for ({limit}); ask for at most {limit}")
