"""The audit log's web side: each change a request made, written after it succeeded, and
``GET /api/audit`` for admins (jobs/accounts/audit.py).

One table of the requests that change something (or hand out a model), by method and path:
creating jobs is recorded by the store itself, with the job (jobs/store/store.py).
"""

from __future__ import annotations

import asyncio
import re

from fastapi import APIRouter, Query, Request
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.responses import Response

from trainyard.core.errors import Forbidden
from trainyard.jobs.accounts import audit
from trainyard.jobs.store import actor as accounts
from trainyard.web.deps import Ctx

# (method, path pattern with the target as its first group, action)
AUDITED = [
    ("POST", re.compile(r"/api/jobs/([^/]+)/abort"), "abort"),
    ("POST", re.compile(r"/api/jobs/([^/]+)/resume"), "resume"),
    ("DELETE", re.compile(r"/api/jobs/([^/]+)"), "delete"),
    ("PATCH", re.compile(r"/api/jobs/([^/]+)"), "patch"),
    ("GET", re.compile(r"/api/models/([^/]+)/download"), "download"),
    ("POST", re.compile(r"/api/models/([^/]+)/export"), "export"),
    ("GET", re.compile(r"/api/models/([^/]+)/export/[^/]+"), "download"),
    ("GET", re.compile(r"/api/models/[^/]+/classify-many/([^/]+)\.csv"), "download"),
    ("POST", re.compile(r"/api/weights()"), "import weights"),
    ("POST", re.compile(r"/api/weights/(.+)/pull"), "pull weights"),
    ("DELETE", re.compile(r"/api/weights/(.+)"), "remove weights"),
    ("PATCH", re.compile(r"/api/weights/(.+)"), "weights visibility"),
]


def audited(method: str, path: str) -> tuple[str, str] | None:
    """(action, target) of a request the log keeps; None for the others."""
    for verb, pattern, action in AUDITED:
        found = pattern.fullmatch(path) if verb == method else None
        if found:
            return action, found.group(1)
    return None


class AuditMiddleware(BaseHTTPMiddleware):
    """Writes an entry for each successful request of AUDITED, as the user who made it."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        entry = audited(request.method, request.url.path)
        actor = accounts.current()
        if entry is not None and response.status_code < 400 and actor is not None:
            store = request.app.state.ctx.store
            await asyncio.to_thread(audit.record, store, actor.name, entry[0], entry[1], actor.source)
        return response


router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("", response_model=audit.AuditPage)
def audit_log(ctx: Ctx, limit: int = Query(200, ge=1, le=10_000),
              user: str | None = Query(None, description="only this user's entries")) -> audit.AuditPage:
    """The audit log, newest first (admins only): user, action, target id, time, source address."""
    actor = accounts.current()
    if actor is not None and not actor.is_admin:
        raise Forbidden("the audit log is for admins")
    return audit.entries(ctx.store, limit, user)
