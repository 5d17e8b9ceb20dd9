"""Only this server's own pages may drive it: Host names checked, cross-site writes refused,
and headers that keep the pages' scripts to the server's own files.

- DNS rebinding: a page of another site whose name is made to resolve to 127.0.0.1 reaches the
  server with its own name in ``Host``. Every request must name the server as it is bound
  (localhost, 127.0.0.1, [::1], the configured host, ``allowed_hosts``), in every mode.
- Cross-site requests: a form or fetch() of another origin can POST to localhost without any
  token. A state-changing request (POST, PUT, PATCH, DELETE) whose ``Sec-Fetch-Site`` is not
  same-origin (or none: typed by the user), or whose ``Origin`` is another one (or "null"), is
  refused with 403. Scripts, curl and the CLI send neither header and pass.
- Content-Security-Policy: no inline script or event handler runs, so markup injected into a
  page (a class folder named ``x" onload="...``) cannot run script either.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from trainyard.settings import Settings

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SAME_ORIGIN_FETCHES = frozenset({"same-origin", "none"})
CSP = ("default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'self'; "
       "frame-ancestors 'none'; form-action 'self'; img-src 'self' data: blob:; "
       "style-src 'self' 'unsafe-inline'; connect-src 'self'")
# /docs is FastAPI's Swagger UI page, which starts the (vendored) bundle with one inline script.
DOCS_CSP = CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"}


def host_name(value: str) -> str:
    """The name part of a Host header or netloc, lower case: 'LocalHost:5000' -> 'localhost'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1]  # an IPv6 address keeps its brackets
    return value.rsplit(":", 1)[0].rstrip(".")


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def allowed_host_names(settings: Settings) -> frozenset[str] | None:
    """The Host names this server answers to, or None for any (allowed_hosts holds "*")."""
    extra = {_bracketed(h.strip().lower()) for h in settings.allowed_hosts}
    if "*" in extra:
        return None
    names = set(LOCAL_NAMES) | extra
    bound = settings.host.strip().lower()
    if bound in WILDCARD_BINDS:
        names |= _machine_names()  # bound to every address: the machine's own names and addresses
    else:
        names.add(_bracketed(bound))
    return frozenset(names)


def _machine_names() -> set[str]:
    hostname = socket.gethostname()
    names = {hostname.lower(), socket.getfqdn().lower()}
    try:
        names |= {_bracketed(str(info[4][0])) for info in socket.getaddrinfo(hostname, None)}
    except OSError:  # a host name that does not resolve
        pass
    return names


def cross_site_reason(request: Request) -> str | None:
    """Why a state-changing request comes from another site's page, or None when it does not."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site.lower() not in SAME_ORIGIN_FETCHES:
        return f"Sec-Fetch-Site is {fetch_site}"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    host = request.headers.get("host", "").lower()
    if origin == "null" or urlsplit(origin.lower()).netloc != host:
        return f"Origin {origin} is not this server"
    return None


class SameOriginMiddleware(BaseHTTPMiddleware):
    """Refuses foreign Host names (400) and cross-site writes (403); adds the security headers."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        super().__init__(app)
        self.names = allowed_host_names(settings)

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        host = request.headers.get("host")
        if self.names is not None and host is not None and host_name(host) not in self.names:
            return JSONResponse({"detail": f"this server does not answer to the name {host_name(host)!r}; "
                                 "add it to TRAINYARD_ALLOWED_HOSTS to allow it"}, status_code=400)
        if request.method in UNSAFE_METHODS:
            reason = cross_site_reason(request)
            if reason:
                return JSONResponse({"detail": f"cross-site request refused ({reason}): use this "
                                     "server's own pages, or a script without a browser"}, status_code=403)
        response = await call_next(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        policy = DOCS_CSP if request.url.path == "/docs" else CSP
        response.headers.setdefault("Content-Security-Policy", policy)
        return response
