"""The one mapping from errors a user can fix to HTTP answers: ``{"detail": one line}``.

Route handlers let a ``UserError`` (or any of its kinds) and pydantic validation errors escape;
these handlers give each its status, so no router translates errors on its own. One error is not
the user's: in cluster mode, no Ray cluster answering at RAY_ADDRESS is a 503 that says so.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from trainyard.cluster.connect import ClusterUnavailable
from trainyard.core.errors import UserError, validation_message


async def user_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=getattr(exc, "http_status", 400))


async def invalid_values(request: Request, exc: Exception) -> JSONResponse:
    # One line, like every other 4xx here, instead of FastAPI's list of error objects.
    return JSONResponse({"detail": validation_message(exc)}, status_code=422)


async def cluster_unavailable(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=503)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(UserError, user_error)
    app.add_exception_handler(ClusterUnavailable, cluster_unavailable)
    app.add_exception_handler(ValidationError, invalid_values)
    app.add_exception_handler(RequestValidationError, invalid_values)
