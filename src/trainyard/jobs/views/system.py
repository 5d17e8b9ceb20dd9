"""What /api/system and ``trainyard system`` report: the backend, this machine's GPUs with their
leases and live readings, CPU and memory, and in cluster mode the cluster's nodes."""

from __future__ import annotations

from trainyard import __version__
from trainyard.jobs.context import Context
from trainyard.jobs.views.hardware import Hardware
from trainyard.sandbox import policy as sandbox


def system_report(ctx: Context, hardware: Hardware) -> dict:
    """The report; in cluster mode it raises ClusterUnavailable when no cluster answers."""
    nodes = None
    if ctx.settings.cluster == "ray":
        from trainyard.cluster.nodes import list_nodes  # ray, lazily: cluster mode only

        nodes = list_nodes()
    leases = ctx.store.leases()
    live = {g["index"]: g for g in hardware.gpus.sample([g.index for g in ctx.pools.gpus])}
    figures = hardware.system()
    report = {
        "version": __version__,
        "backend": ctx.settings.cluster,
        "gpus": [
            {**live.get(g.index, {}), "index": g.index, "name": g.name, "memory_total": g.memory_total,
             "label": g.label, "job": leases.get(g.resource)}
            for g in ctx.pools.gpus
        ],
        "cpu": {"count": figures["cpu_count"], "percent": figures["cpu_percent"]},
        "memory": {"total": figures["memory_total"], "used": figures["memory_used"]},
        "leases": leases,
        "sandbox": sandbox.status(),  # what confines custom networks here (sandbox/policy.py)
    }
    if nodes is not None:
        report["nodes"] = nodes
    return report
