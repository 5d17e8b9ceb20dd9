"""What the server's agent process (agent.py) asks Ray: the functions of `ASKED`, each called
with the agent's connected ``ray``; their answers are JSON (they cross a pipe).

Ray's node table gives each node's id, address, liveness and CPU/GPU counts; what is free comes
from Ray's per-node accounting, and which jobs hold a node from the placement groups the
launcher names after them. GPU names and memory come from NVML on the node itself, read once per
node by a zero-CPU task pinned to it (GPUs do not change while a node lives).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from trainyard.cluster.previous_runs import job_of
from trainyard.cluster.rank_worker import read_gpus

ASK_S = 5.0  # how long the agent waits for a node or an actor to answer
_gpu_cache: dict[str, list[dict]] = {}
_cache_lock = threading.Lock()


def _resources(ray: Any) -> dict:
    return dict(ray.cluster_resources())


def _nodes(ray: Any) -> list[dict]:
    available = _available_per_node()
    jobs = _jobs_per_node(ray)
    nodes = []
    for node in ray.nodes():
        node_id = node["NodeID"]
        total = node.get("Resources", {})
        free = available.get(node_id)  # None: unknown; a resource all in use is left out of it
        alive = bool(node.get("Alive"))
        cpus, gpus = int(total.get("CPU", 0)), int(total.get("GPU", 0))
        ended_ms = node.get("end_time_ms") or 0  # Ray's record of its death, where it keeps one
        nodes.append({
            "id": node_id, "host": node.get("NodeManagerHostname") or node.get("NodeManagerAddress"),
            "ip": node.get("NodeManagerAddress"), "alive": alive, "head": "node:__internal_head__" in total,
            "cpus": cpus, "cpus_in_use": _in_use(cpus, free, "CPU", alive),
            "gpus": _node_gpus(ray, node_id, gpus) if alive else [],
            "gpus_in_use": _in_use(gpus, free, "GPU", alive),
            "memory_total": int(total.get("memory", 0)), "jobs": sorted(jobs.get(node_id, [])),
            "ended": ended_ms / 1000 if ended_ms and not alive else None,
        })
    return sorted(nodes, key=lambda n: (not n["alive"], not n["head"], n["host"] or "", n["id"]))


def _in_use(total: int, free: dict | None, resource: str, alive: bool) -> int | None:
    return None if free is None or not alive else int(round(total - free.get(resource, 0)))


def _available_per_node() -> dict[str, dict]:
    try:
        from ray._private import state

        return state.available_resources_per_node()
    except Exception:  # a Ray without this (private) accessor: "in use" is unknown
        return {}


def _jobs_per_node(ray: Any) -> dict[str, set[str]]:
    """node id -> ids of the trainyard jobs whose placement group has a bundle there."""
    out: dict[str, set[str]] = {}
    try:
        table = ray.util.placement_group_table()
    except Exception:
        return out
    for group in table.values():
        name = group.get("name") or ""
        if not name.startswith("trainyard-") or group.get("state") == "REMOVED":
            continue
        job_id = job_of(name)
        for node_id in (group.get("bundles_to_node_id") or {}).values():
            out.setdefault(node_id, set()).add(job_id)
    return out


def _node_gpus(ray: Any, node_id: str, count: int) -> list[dict]:
    """Index, name and memory of a node's GPUs, read there once; bare indices if it won't say."""
    if count == 0:
        return []
    with _cache_lock:
        if node_id in _gpu_cache:
            return _gpu_cache[node_id]
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(read_gpus)
    try:
        read = ray.get(task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
                       .remote([str(i) for i in range(count)]), timeout=ASK_S)
    except Exception:
        read = []
    gpus = [{"index": g["index"], "name": g["name"], "memory_total": g["memory_total"]} for g in read]
    if len(gpus) != count:
        return [{"index": i, "name": None, "memory_total": None} for i in range(count)]
    with _cache_lock:
        _gpu_cache[node_id] = gpus
    return gpus


def _figures(ray: Any, workers: list[dict]) -> list[dict]:
    refs = {}
    for worker in workers:
        try:
            refs[worker["rank"]] = ray.get_actor(worker["actor"]).figures.remote()
        except Exception:
            continue  # the actor is gone (the job is ending, or its node is)
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=ASK_S) if refs else ([], [])
    out = []
    for worker in workers:
        ref = refs.get(worker["rank"])
        figures: dict[str, Any] = {"cpu": None, "gpus": []}
        if ref is not None and ref in ready:
            try:
                figures = ray.get(ref)
            except Exception:
                pass
        out.append({**worker, **figures})
    return out


ASKED: dict[str, Callable[..., Any]] = {"resources": _resources, "nodes": _nodes, "figures": _figures}
