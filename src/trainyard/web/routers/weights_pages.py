"""The weights page: the store, searchable, with pulls, imports and each entry's visibility
(static/weights.js)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from trainyard.core.ownership import VISIBILITIES
from trainyard.web.deps import Ctx
from trainyard.web.routers.pages import render

router = APIRouter(include_in_schema=False)


@router.get("/weights", response_class=HTMLResponse)
def weights_page(request: Request, ctx: Ctx):
    # the visibility control's options (static/weights.js shows it on the rows one may change)
    return render(request, "weights.html", folder=ctx.settings.weights_dir, visibilities=VISIBILITIES)
