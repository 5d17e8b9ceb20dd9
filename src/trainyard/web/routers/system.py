"""/api/system: the devices trainyard can use, with live GPU (NVML), CPU and memory figures."""

from __future__ import annotations

from fastapi import APIRouter

from trainyard import __version__
from trainyard.web.deps import Ctx, Hw

router = APIRouter(prefix="/api/system", tags=["system"])


@router.get("")
def system(ctx: Ctx, hardware: Hw) -> dict:
    """Each GPU with its lease and live readings (utilization %, memory, temperature, power)."""
    leases = ctx.store.leases()
    live = {g["index"]: g for g in hardware.gpus.sample([g.index for g in ctx.pools.gpus])}
    figures = hardware.system()
    return {
        "version": __version__,
        "gpus": [
            {**live.get(g.index, {}), "index": g.index, "name": g.name, "memory_total": g.memory_total,
             "label": g.label, "job": leases.get(f"gpu:{g.index}")}
            for g in ctx.pools.gpus
        ],
        "cpu": {"count": figures["cpu_count"], "percent": figures["cpu_percent"]},
        "memory": {"total": figures["memory_total"], "used": figures["memory_used"]},
        "leases": leases,
    }
