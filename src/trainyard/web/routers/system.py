"""/api/system: the devices trainyard can use, and live CPU and memory figures."""

from __future__ import annotations

import os

import psutil
from fastapi import APIRouter

from trainyard import __version__
from trainyard.web.deps import Ctx

router = APIRouter(prefix="/api/system", tags=["system"])


@router.get("")
def system(ctx: Ctx) -> dict:
    memory = psutil.virtual_memory()
    leases = ctx.store.leases()
    return {
        "version": __version__,
        "gpus": [
            {"index": g.index, "name": g.name, "memory_total": g.memory_total, "label": g.label,
             "job": leases.get(f"gpu:{g.index}")}
            for g in ctx.pools.gpus
        ],
        "cpu": {"count": os.cpu_count(), "percent": psutil.cpu_percent(interval=None)},
        "memory": {"total": memory.total, "used": memory.total - memory.available},
        "leases": leases,
    }
