"""Token authentication on every door: a bearer header, or a session cookie.

Every page and API call needs the server's token, on localhost too (TRAINYARD_AUTH_TOKEN, else
the server's own fresh one: core/server_token.py): as ``Authorization: Bearer``, or the signed
session cookie (sessions.py; the cookie never holds the token) that the login form sets, or that
a page opened with ``?token=`` gets (the URL ``serve`` prints: one step, as Jupyter's), the token
then dropped from the address at once by a redirect.
Each credential names a user (web/identity.py), who acts for the rest of the request
(jobs/store/actor.py): the server's token is the first admin's.
Wrong bearer tokens count against the same limiter as wrong sign-ins (per client address and,
on this machine, per local account: peers.py). The limiter slows the failing source, never the
right credential: the right token is always let in, and a wrong one from a source over the limit
waits `LIMITED_DELAY_S` for its 429. Refusing the right token too (as before) let anyone who
shares the owner's address lock the owner out for minutes with five wrong guesses; the guesser
gains nothing from it, since a token is at least 12 characters (settings.MIN_TOKEN_LENGTH; the
server's own is 32 random ones), too many to guess at any speed.
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import replace
from urllib.parse import quote, urlencode

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from trainyard.core.ownership import Actor
from trainyard.jobs.store.actor import acting
from trainyard.web.identity import Identities
from trainyard.web.peers import client_key
from trainyard.web.sessions import COOKIE, MAX_AGE_S, LoginLimiter, new_session, valid_session

OPEN_PATHS = ("/login", "/favicon.ico")  # exactly these paths, plus everything under OPEN_PREFIXES
OPEN_PREFIXES = ("/static/",)
LIMITED_DELAY_S = 1.0  # a wrong token from a source over the limit waits this long for its 429
TOO_MANY = "too many wrong tokens from this client: wait a minute, then try again"


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
        if actor is not None:  # the right credential, however many wrong ones came before
            with acting(actor):  # the handler's threads inherit it (contextvars)
                return await call_next(request)
        if bearer_of(request) is not None:  # a wrong guess at the token, like a sign-in: limited alike
            who = requester(request)
            if not self.limiter.allowed(who):
                return await _refused_slowly()
            self.limiter.failed(who)
        if path.startswith("/api") or path in ("/docs", "/openapi.json"):
            return JSONResponse({"detail": "authentication required: send 'Authorization: Bearer <token>'"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        target = path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)

    def hand_over(self, request: Request, given: str) -> Response:
        """The page without ``?token=`` in its address; with a session cookie when the token is right."""
        who = requester(request)
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        target = request.url.path + (f"?{rest}" if rest else "")
        actor = self.identities.by_token(given)
        if actor is None:
            if not self.limiter.allowed(who):
                return JSONResponse({"detail": TOO_MANY}, status_code=429, headers={"Retry-After": "60"})
            self.limiter.failed(who)
            return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, new_session(self.token, user=actor.name), max_age=MAX_AGE_S, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response


async def _refused_slowly() -> Response:
    """The 429 a wrong token from a source over the limit gets, after `LIMITED_DELAY_S`: the
    guesser is slowed, the server holds only a sleeping coroutine."""
    await asyncio.sleep(LIMITED_DELAY_S)
    return JSONResponse({"detail": TOO_MANY}, status_code=429, headers={"Retry-After": "60"})
