"""The cluster as the server reports it: its nodes (/api/system, `trainyard system`) and the live
figures of a job's workers (the job page's hardware panel).

The questions are asked of Ray in the server's agent process (agent.py, queries.py), never in
the server's own; these functions ask them and raise ClusterUnavailable (a 503) while no head
answers. A dead node is listed once, with when it died, for `DEAD_SHOWN_S`; then it leaves the
list.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from trainyard.cluster.agent import RayAgent
from trainyard.cluster.connect import ClusterUnavailable
from trainyard.cluster.queries import ASK_S

DEAD_SHOWN_S = 600.0  # how long a dead node stays in the list
_agent = RayAgent()  # in the server: its one connection to Ray
_died: dict[str, float] = {}  # in the server: node id -> when it was first seen dead (unix time)


def cluster_has_gpus() -> bool:
    """True if the cluster has any GPU (False too when it is unreachable: the job then fails
    in its launcher, with the message that says why)."""
    try:
        return _agent.ask("resources").get("GPU", 0) > 0
    except ClusterUnavailable:
        return False


def list_nodes(now: float | None = None) -> list[dict]:
    """Every live node, and each node that died within DEAD_SHOWN_S with ``died_at``: id,
    host, alive, CPUs and GPUs (with names, memory) and their use."""
    now = time.time() if now is None else now
    out = []
    for node in _agent.ask("nodes"):
        if not node["alive"]:
            died = _died.setdefault(node["id"], node.pop("ended", None) or now)
            if now - died > DEAD_SHOWN_S:
                continue
            node["died_at"] = datetime.fromtimestamp(died, timezone.utc).isoformat(timespec="seconds")
        node.pop("ended", None)
        out.append(node)
    return out


def worker_figures(workers: list[dict]) -> list[dict]:
    """Each worker of a running job with its live figures, asked of its actor on its node."""
    return _agent.ask("figures", workers, timeout_s=ASK_S + 10)


def connected_cpus() -> int | None:
    """The cluster's CPUs when the server is already connected to Ray, else None: connecting
    just to validate a request would be a side effect."""
    if not _agent.connected:
        return None
    try:
        return int(_agent.ask("resources").get("CPU", 0)) or None
    except ClusterUnavailable:
        return None
