"""How many data-parallel CPU processes a job may ask for: no more than can run at once.

``processes=100000`` used to be accepted and fail (or fork-bomb) at run time. Locally the cap
is the machine's CPU count; with ``TRAINYARD_CLUSTER=ray`` it is the cluster's CPUs when this
process is connected to Ray, else the spec's hard cap.
"""

from __future__ import annotations

import os

from trainyard.core.errors import InvalidInput
from trainyard.core.limits import MAX_PROCESSES


def max_processes(cluster: str = "local") -> int:
    if cluster == "ray":
        from trainyard.cluster.nodes import connected_cpus  # the one layer that imports ray

        return connected_cpus() or MAX_PROCESSES
    return os.cpu_count() or 1


def check_processes(processes: int, cluster: str = "local") -> None:
    limit = max_processes(cluster)
    if processes > limit:
        where = "the cluster has" if cluster == "ray" else "this machine has"
        raise InvalidInput(f"processes={processes} is more than {where} CPUs for ({limit}); ask for at most {limit}")
