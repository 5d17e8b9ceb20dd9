"""Runs side by side: ``GET /api/jobs/compare?ids=A,B`` and the ``/compare?ids=A,B`` page; a
sweep's page ``/sweeps?group=NAME`` (and ``GET /api/sweeps?group=NAME``) with the same view, and
``/sweeps`` alone (and ``GET /api/sweeps``), the list of every sweep.

Included before the jobs router, so that ``/api/jobs/compare`` is not taken for a job id.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from trainyard.jobs.views.compare import MAX_RUNS, compare, parse_ids
from trainyard.jobs.views.sweep import sweep, sweeps
from trainyard.web.deps import Ctx
from trainyard.web.routers.pages import render
from trainyard.web.schemas.runs import Comparison, Sweep, SweepList

router = APIRouter()
IDS = Query("", description=f"comma-separated model job ids, 1 to {MAX_RUNS}")


@router.get("/api/jobs/compare", tags=["jobs"], response_model=Comparison)
def compare_jobs(ctx: Ctx, ids: str = IDS) -> Comparison:
    """``{"jobs": [{id, name, status, settings, best, final}], "differs": [...], "series": {...}}``."""
    return compare(ctx.manager, parse_ids(ids))


@router.get("/compare", response_class=HTMLResponse, include_in_schema=False)
def compare_page(request: Request, ctx: Ctx, ids: str = IDS):
    doc = compare(ctx.manager, parse_ids(ids))
    return render(request, "compare.html", doc=doc.model_dump(), ids=",".join(j.id for j in doc.jobs))


@router.get("/api/sweeps", tags=["jobs"], response_model=Sweep | SweepList)
def show_sweep(ctx: Ctx, group: str = Query("", description="the sweep's name (its jobs' group); "
                                                            "absent: every sweep, a line each")) -> Sweep | SweepList:
    """A sweep's runs, their states, the best so far and what early stopping stopped; without
    ``group``, ``{"sweeps": [...]}``: every sweep, newest first, as the ``/sweeps`` page lists them."""
    if not group:
        return SweepList(sweeps=sweeps(ctx.store))
    return sweep(ctx.manager, group)


@router.get("/sweeps", response_class=HTMLResponse, include_in_schema=False)
def sweep_page(request: Request, ctx: Ctx, group: str = ""):
    if not group:
        return render(request, "sweeps.html", sweeps=[line.model_dump() for line in sweeps(ctx.store)])
    found = sweep(ctx.manager, group)
    doc = compare(ctx.manager, found.compare_ids)
    return render(request, "sweep.html", sweep=found.model_dump(), doc=doc.model_dump(),
                  ids=",".join(found.compare_ids))
