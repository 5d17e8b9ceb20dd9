"""The admins' page of the audit log (``/audit``): the entries of ``GET /api/audit`` as a table."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from trainyard.core.errors import Forbidden
from trainyard.jobs.accounts import audit
from trainyard.jobs.store import actor as accounts
from trainyard.web.deps import Ctx
from trainyard.web.routers.pages import render

router = APIRouter(include_in_schema=False)


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request, ctx: Ctx, limit: int = Query(500, ge=1, le=10_000)):
    actor = accounts.current()
    if actor is not None and not actor.is_admin:
        raise Forbidden("the audit log is for admins")
    return render(request, "audit.html", entries=audit.entries(ctx.store, limit).entries)
