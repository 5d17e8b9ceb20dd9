"""Errors as a person in a browser sees them: an HTML page with the site's header, what went
wrong in words and a way back, where the API answers ``{"detail": one line}``.

Only a page request gets a page: a path outside ``/api`` whose request accepts ``text/html``
and is not one of htmx's partial fetches. Every API answer keeps its JSON shape (web/errors.py).
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

TITLES = {400: "That request cannot be carried out", 403: "Not allowed here", 404: "Not found",
          405: "Not a page", 409: "Not possible right now", 413: "Too large", 422: "Not a valid value",
          429: "Too many requests", 503: "The server cannot do this now"}
# Where a page's address leads back to its list: a bad model id back to the home list, a sweep to
# the list of sweeps.
LISTS = (("/sweeps", "/sweeps", "All sweeps"), ("/weights", "/weights", "Weights"))


def wants_page(request: Request) -> bool:
    """A browser asking for a page (not a script's API call, a static file or an htmx partial)."""
    path = request.url.path
    if path.startswith(("/api/", "/static/", "/partials/")) or path == "/api" or request.headers.get("hx-request"):
        return False
    return "text/html" in request.headers.get("accept", "")


def error_page(request: Request, status: int, message: str, headers: dict | None = None) -> HTMLResponse:
    from trainyard.web.routers.pages import render  # the page templates load with the routers

    path = request.url.path
    asked = f"{path}?{request.url.query}" if request.url.query else path
    back = next(((href, text) for prefix, href, text in LISTS if path.startswith(prefix) and asked != href),
                ("/", "Home: datasets and models"))
    response = render(request, "error.html", status=status, title=TITLES.get(status, "Something went wrong"),
                      message=message, path=path, back=back)
    response.status_code = status
    if headers:
        response.headers.update(headers)
    return response


def page_message(status: int, detail: str, path: str) -> str:
    """The message in words; starlette's bare "Not Found" for an unknown address says which."""
    if status == 404 and detail == "Not Found":
        return f"There is no page at {path}."
    if status == 405 and detail == "Method Not Allowed":
        return f"{path} cannot be opened as a page."
    return detail[:1].upper() + detail[1:] + ("" if detail.endswith((".", "?", "!")) else ".")
