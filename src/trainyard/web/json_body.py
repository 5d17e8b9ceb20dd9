"""Parse JSON a client sent by hand (a multipart field, a raw body) into a 422 when it is bad.

``json.loads`` raises RecursionError on a deeply nested document and ValueError on bad UTF-8
or an over-long integer; every one of those is the client's mistake, never a 500.
"""

from __future__ import annotations

import json

from trainyard.core.errors import InvalidInput


def parse_json(text: str | bytes, what: str = "the body") -> object:
    """The decoded value, or InvalidInput with one line saying why ``what`` is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidInput(f"{what} is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, int digits limit
        raise InvalidInput(f"{what} is not valid JSON: {str(exc).splitlines()[0]}") from None


def parse_json_object(text: str | bytes, what: str = "the body") -> dict:
    value = parse_json(text or b"{}", what)
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    return value
