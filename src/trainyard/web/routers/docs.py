"""The interactive API docs (/docs) from the vendored Swagger UI, and the site's favicon.

FastAPI's default /docs loads Swagger UI from a CDN, which leaves the page blank on a machine
without internet; these assets ship inside the package (static/vendor/swagger-ui).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

STATIC = Path(__file__).parent.parent / "static"
FAVICON = STATIC / "favicon.svg"

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url, title=f"{request.app.title} API",
        swagger_js_url="/static/vendor/swagger-ui/swagger-ui-bundle.js",
        swagger_css_url="/static/vendor/swagger-ui/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg")


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    """Browsers ask for /favicon.ico on every page that names no icon (and on /docs' JSON)."""
    return FileResponse(FAVICON, media_type="image/svg+xml")
