"""The one error vocabulary for mistakes a user can fix.

Domain code raises a ``UserError`` (or one of its kinds) with a one-line message that says what
to change. The web app turns it into a 4xx with ``{"detail": message}`` and the CLI into exit
code 2 with the message on stderr, each in one place; anything else that escapes is a defect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


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


def validated(model: type[M], data: Any, *, what: str = "", error: type[UserError] = InvalidInput) -> M:
    """``model.model_validate(data)``; a pydantic ValidationError becomes ``error`` (by default
    InvalidInput, HTTP 422 / CLI exit 2) with the one-line ``validation_message``, after ``what``.

    The one way domain code turns invalid values into a user's error. Pydantic is imported here,
    not at the top: processes that import core only for its errors need not pay for it.
    """
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        message = validation_message(exc)
        raise error(f"{what}: {message}" if what else message) from None


def error_chain(error: BaseException, most: int = 20) -> list[BaseException]:
    """``error`` and what caused it (``__cause__``, else ``__context__``), as far as it goes."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < most:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
