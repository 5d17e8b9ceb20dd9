"""The one error vocabulary for mistakes a user can fix.

Domain code raises a ``UserError`` (or one of its kinds) with a one-line message that says what
to change. The web app turns it into a 4xx with ``{"detail": message}`` and the CLI into exit
code 2 with the message on stderr, each in one place; anything else that escapes is a defect.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input: the request or command cannot be carried out as given (HTTP 400/422)."""

    http_status = 400


class InvalidInput(UserError):
    """A value that is well-formed but not acceptable (HTTP 422)."""

    http_status = 422


class NotFound(UserError):
    """The thing named does not exist (HTTP 404)."""

    http_status = 404


class Conflict(UserError):
    """The thing exists but is not in a state that allows this (HTTP 409)."""

    http_status = 409


class TooLarge(UserError):
    """More than the server takes in one request: an upload past its size limit (HTTP 413)."""

    http_status = 413


class Forbidden(UserError):
    """Outside what this server may touch, such as a path beyond the data roots (HTTP 403)."""

    http_status = 403


def validation_message(error) -> str:
    """Pydantic's (or FastAPI's request) validation errors as one line: 'epochs: must be > 0; ...'.

    Takes anything with pydantic's ``errors()`` list, so a ValidationError raised in domain code
    and a RequestValidationError from FastAPI read the same.
    """
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
