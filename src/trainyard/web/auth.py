"""Token authentication on every door: a bearer header, or a session cookie.

Every page and API call needs the server's token, on localhost too (TRAINYARD_AUTH_TOKEN, else
the server's own fresh one: core/server_token.py): as ``Authorization: Bearer``, or the signed
session cookie (sessions.py; the cookie never holds the token) that the login form sets, or that
a page opened with ``?token=`` gets (the URL ``serve`` prints: one step, as Jupyter's), the token
then dropped from the address at once by a redirect.
Each credential names a user (web/identity.py), who acts for the rest of the request
(jobs/accounts/actor.py): the server's token is the first admin's.
Wrong bearer tokens count against the same limiter as wrong sign-ins (per client address and,
on this machine, per local account: peers.py), so the token cannot be guessed at speed by
either door, and one account's guessing locks out only that account.
"""

from __future__ import annotations

import hmac
from dataclasses import replace
from urllib.parse import quote, urlencode

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from trainyard.jobs.accounts.actor import Actor, acting
from trainyard.web.identity import Identities
from trainyard.web.peers import client_key
from trainyard.web.sessions import COOKIE, MAX_AGE_S, LoginLimiter, new_session, valid_session

OPEN_PATHS = ("/login", "/favicon.ico")  # exactly these paths, plus everything under OPEN_PREFIXES
OPEN_PREFIXES = ("/static/",)


def token_matches(given: str | None, token: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def requester(request: Request) -> str:
    """The limiter's key for ``request``'s client (peers.py)."""
    client = request.client
    return client_key(client.host, client.port) if client else "unknown"


def bearer_of(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else None


def authenticated(request: Request, token: str, identities: Identities) -> Actor | None:
    """The user of a bearer header's token, or of a valid session cookie; None: no one."""
    given = bearer_of(request)
    if given is not None:
        actor = identities.by_token(given)
    else:
        name = valid_session(request.cookies.get(COOKIE), token)
        actor = identities.by_name(name) if name else None
    source = request.client.host if request.client else None
    return replace(actor, source=source) if actor is not None else None


class TokenAuthMiddleware(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, token: str, identities: Identities,
                 limiter: LoginLimiter | None = None) -> None:
        super().__init__(app)
        self.token = token
        self.identities = identities
        self.limiter = limiter or LoginLimiter()

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        path = request.url.path
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return await call_next(request)
        handed = request.query_params.get("token") if request.method == "GET" else None
        if handed is not None and not path.startswith("/api"):
            return self.hand_over(request, handed)
        actor = authenticated(request, self.token, self.identities)
        ok = actor is not None
        if bearer_of(request) is not None:  # a guess at the token, like a sign-in: limited alike
            who = requester(request)
            if not self.limiter.allowed(who):
                return JSONResponse({"detail": "too many wrong tokens from this client: wait a minute, "
                                     "then try again"}, status_code=429, headers={"Retry-After": "60"})
            if not ok:
                self.limiter.failed(who)
        if ok:
            with acting(actor):  # the handler's threads inherit it (contextvars)
                return await call_next(request)
        if path.startswith("/api") or path in ("/docs", "/openapi.json"):
            return JSONResponse({"detail": "authentication required: send 'Authorization: Bearer <token>'"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        target = path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)

    def hand_over(self, request: Request, given: str) -> Response:
        """The page without ``?token=`` in its address; with a session cookie when the token is right."""
        who = requester(request)
        if not self.limiter.allowed(who):
            return JSONResponse({"detail": "too many wrong tokens from this client: wait a minute, "
                                 "then try again"}, status_code=429, headers={"Retry-After": "60"})
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        target = request.url.path + (f"?{rest}" if rest else "")
        actor = self.identities.by_token(given)
        if actor is None:
            self.limiter.failed(who)
            return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, new_session(self.token, user=actor.name), max_age=MAX_AGE_S, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response
