"""The one mapping from errors a user can fix to HTTP answers: ``{"detail": one line}``.

Route handlers let a ``UserError`` (or any of its kinds) and pydantic validation errors escape;
these handlers give each its status, so no router translates errors on its own. One error is not
the user's: in cluster mode, no Ray cluster answering at RAY_ADDRESS is a 503 that says so.
A browser's page request gets the same words on an HTML page instead (web/error_pages.py).
"""

from __future__ import annotations

import errno

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException

from trainyard.cluster.connect import ClusterUnavailable
from trainyard.core.errors import UserError, validation_message
from trainyard.web.error_pages import error_page, page_message, wants_page


def answer(request: Request, status: int, detail: str, headers: dict | None = None) -> Response:
    """``{"detail": detail}``, or for a browser's page request the same words on an HTML page."""
    if wants_page(request):
        return error_page(request, status, page_message(status, detail, request.url.path), headers)
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def user_error(request: Request, exc: Exception) -> Response:
    # A refusal for now (a full checker queue, 429) says when to come back.
    retry_after = getattr(exc, "retry_after", None)
    return answer(request, getattr(exc, "http_status", 400), str(exc),
                  {"Retry-After": str(retry_after)} if retry_after else None)


async def invalid_values(request: Request, exc: Exception) -> Response:
    # One line, like every other 4xx here, instead of FastAPI's list of error objects.
    return answer(request, 422, validation_message(exc))


async def cluster_unavailable(request: Request, exc: Exception) -> Response:
    return answer(request, 503, str(exc))


async def no_such_route(request: Request, exc: Exception) -> Response:
    """An unknown address (404) or method (405): a page for a browser, FastAPI's own JSON otherwise."""
    assert isinstance(exc, HTTPException)
    if wants_page(request):
        return error_page(request, exc.status_code, page_message(exc.status_code, str(exc.detail), request.url.path),
                          dict(exc.headers) if exc.headers else None)
    return await http_exception_handler(request, exc)
# The server's own storage refused a write: not the client's mistake, and not a defect either.
STORAGE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


async def storage_unavailable(request: Request, exc: Exception) -> Response:
    """A read-only or full home (files or SQLite database): 503 with what to fix, not a bare 500."""
    if isinstance(exc, OSError) and exc.errno not in STORAGE_ERRNOS:
        raise exc  # any other OSError is a defect: let it be a 500 with its traceback logged
    if isinstance(exc, OperationalError) and not _is_storage(exc):
        raise exc
    if isinstance(exc, OSError):
        reason = exc.strerror
    else:
        reason = str(getattr(exc, "orig", exc)).splitlines()[0]
    where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
    return answer(request, 503, f"the server cannot write its files{where}: {reason}; "
                                "check that TRAINYARD_HOME is writable and has free space", {"Retry-After": "30"})


def _is_storage(exc: OperationalError) -> bool:
    text = str(exc.orig).lower()
    return any(word in text for word in ("readonly", "read-only", "disk", "unable to open", "full"))


# What every 4xx here looks like, documented in place of FastAPI's list of error objects, so
# /openapi.json tells clients (and schemathesis) the truth about 422 answers.
ERROR_SCHEMA = {"title": "Error", "type": "object", "required": ["detail"],
                "properties": {"detail": {"title": "Detail", "type": "string"}}}


# Every operation may refuse (any 4xx, install_error_handlers) or find its storage unwritable (503):
# documented once for all, so a client (and schemathesis' status-code check) knows every answer.
ERROR_RESPONSES = {"4XX": "A request the server refuses: what to change", "503": "Storage or cluster unavailable"}


def document_error_shape(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()  # FastAPI caches it; replacing the entries again is harmless
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        if "HTTPValidationError" in schemas:
            schemas["HTTPValidationError"] = ERROR_SCHEMA
        schemas["Error"] = ERROR_SCHEMA
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                for code, description in ERROR_RESPONSES.items():
                    responses.setdefault(code, {"description": description, **error})
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(UserError, user_error)
    app.add_exception_handler(HTTPException, no_such_route)
    app.add_exception_handler(ClusterUnavailable, cluster_unavailable)
    app.add_exception_handler(ValidationError, invalid_values)
    app.add_exception_handler(RequestValidationError, invalid_values)
    app.add_exception_handler(OSError, storage_unavailable)
    app.add_exception_handler(OperationalError, storage_unavailable)
    document_error_shape(app)
