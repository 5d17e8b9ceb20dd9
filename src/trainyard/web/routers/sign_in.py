"""Sign-in and sign-out pages: a user's name and password (argon2, jobs/accounts/users.py), or
an API token (the server's own, as before accounts, or a personal one).

Either gives a session cookie that names the user (web/sessions.py: signed, never the
credential). Failed sign-ins count against the same limiter as wrong bearer tokens, and both
outcomes go to the audit log.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from trainyard.core.ownership import Actor
from trainyard.jobs.accounts import audit, users
from trainyard.web.auth import requester
from trainyard.web.routers.pages import render
from trainyard.web.sessions import COOKIE, MAX_AGE_S, new_session

router = APIRouter(include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/", error: str | None = None):
    return render(request, "login.html", next=next, error=error)


def _who(request: Request, token: str, name: str, password: str) -> Actor | None:
    store = request.app.state.ctx.store
    if name:
        return users.check_password(store, name, password)
    return request.app.state.identities.by_token(token)


@router.post("/login")
def login(request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/",
          name: Annotated[str, Form()] = "", password: Annotated[str, Form()] = ""):
    limiter = request.app.state.login_limiter
    client = requester(request)  # per address, and per local account on this machine
    store = request.app.state.ctx.store
    source = request.client.host if request.client else None
    actor = _who(request, token, name.strip().lower(), password) if (token or name) else None
    if actor is None:  # the right credential is never refused, however many wrong ones came first
        if not limiter.allowed(client):
            refused = render(request, "login.html", next=next,
                             error="Too many wrong tokens or passwords: wait a minute, then try again.")
            refused.status_code = 429
            return refused
        limiter.failed(client)
        audit.record(store, name or None, "sign-in refused", None, source)
        error = "That name and password are not right." if name else "That token is not right."
        return render(request, "login.html", next=next, error=error)
    audit.record(store, actor.name, "sign-in", None, source)
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = RedirectResponse(target, status_code=303)
    # A random session id signed with the server's token: the cookie gives nobody a credential.
    response.set_cookie(COOKIE, new_session(request.app.state.auth_token, user=actor.name), max_age=MAX_AGE_S,
                        httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/logout")
def logout(request: Request):
    """Sign out: the cookie is dropped (a cross-site POST never gets here: web/security.py)."""
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response
