"""/api/system: the backend and the devices trainyard can use, with live GPU (NVML), CPU and
memory figures; in cluster mode the cluster's nodes (503 when no cluster answers)."""

from __future__ import annotations

from fastapi import APIRouter

from trainyard.jobs.views.system import system_report
from trainyard.web.deps import Ctx, Hw
from trainyard.web.schemas.inference import SystemReport

router = APIRouter(prefix="/api/system", tags=["system"])


@router.get("", response_model=SystemReport)
def system(ctx: Ctx, hardware: Hw) -> SystemReport:
    """Each GPU with its lease and live readings (utilization %, memory, temperature, power)."""
    return system_report(ctx, hardware)
