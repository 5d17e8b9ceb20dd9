"""Optional token authentication: a bearer header, or a login form that sets a session cookie.

With no TRAINYARD_AUTH_TOKEN the server only binds to localhost (see cli serve), and every
request passes. With a token, every page and API call needs it: as ``Authorization: Bearer``,
or the signed session cookie the login form sets (sessions.py; the cookie never holds the token).
"""

from __future__ import annotations

import hmac
from urllib.parse import quote

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse

from trainyard.web.sessions import COOKIE, valid_session

OPEN_PATHS = ("/login", "/favicon.ico")  # exactly these paths, plus everything under OPEN_PREFIXES
OPEN_PREFIXES = ("/static/",)


def token_matches(given: str | None, token: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def authenticated(request: Request, token: str) -> bool:
    """A bearer header with the token, or a valid session cookie."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return token_matches(header[7:].strip(), token)
    return valid_session(request.cookies.get(COOKIE), token)


class TokenAuthMiddleware(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next):
        path = request.url.path
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or authenticated(request, self.token):
            return await call_next(request)
        if path.startswith("/api") or path in ("/docs", "/openapi.json"):
            return JSONResponse({"detail": "authentication required: send 'Authorization: Bearer <token>'"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        target = path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)
