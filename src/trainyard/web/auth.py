"""Optional token authentication: a bearer header, or a login form that sets a cookie.

With no TRAINYARD_AUTH_TOKEN the server only binds to localhost (see cli serve), and every
request passes. With a token, every page and API call needs it.
"""

from __future__ import annotations

import hmac
from urllib.parse import quote

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse

COOKIE = "trainyard_token"
OPEN_PATHS = ("/login",)  # exactly these paths, plus everything under OPEN_PREFIXES
OPEN_PREFIXES = ("/static/",)


def token_matches(given: str | None, token: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def request_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


class TokenAuthMiddleware(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next):
        path = request.url.path
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or token_matches(request_token(request), self.token):
            return await call_next(request)
        if path.startswith("/api") or path in ("/docs", "/openapi.json"):
            return JSONResponse({"detail": "authentication required: send 'Authorization: Bearer <token>'"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        target = path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)
