"""Runs side by side: ``GET /api/jobs/compare?ids=A,B`` and the ``/compare?ids=A,B`` page.

Included before the jobs router, so that ``/api/jobs/compare`` is not taken for a job id.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from trainyard.jobs.compare import MAX_RUNS, compare, parse_ids
from trainyard.web.deps import Ctx
from trainyard.web.routers.pages import render

router = APIRouter()
IDS = Query("", description=f"comma-separated model job ids, 1 to {MAX_RUNS}")


@router.get("/api/jobs/compare", tags=["jobs"])
def compare_jobs(ctx: Ctx, ids: str = IDS) -> dict:
    """``{"jobs": [{id, name, status, settings, best, final}], "differs": [...], "series": {...}}``."""
    return compare(ctx.manager, parse_ids(ids))


@router.get("/compare", response_class=HTMLResponse, include_in_schema=False)
def compare_page(request: Request, ctx: Ctx, ids: str = IDS):
    doc = compare(ctx.manager, parse_ids(ids))
    return render(request, "compare.html", doc=doc, ids=",".join(j["id"] for j in doc["jobs"]))
