"""Sign-in with a token or a password: a signed random session id in the cookie, never the token.

A session cookie is ``<random id>~<user>.<expiry>.<signature>``: the signature is an HMAC of the id and
expiry under a key derived from the token, so the server keeps no session table, a cookie cannot
be forged or extended, and changing the token ends every session. Failed sign-ins are limited
per client address (`LoginLimiter`), so the token cannot be guessed at speed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import defaultdict, deque

COOKIE = "trainyard_session"
MAX_AGE_S = 7 * 24 * 3600
MAX_FAILURES = 5  # failed sign-ins per client address ...
FAILURE_WINDOW_S = 60.0  # ... within this many seconds, then refused until the oldest ages out


def _sign(token: str, payload: str) -> str:
    key = hmac.new(token.encode(), b"trainyard session key", hashlib.sha256).digest()
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def new_session(token: str, now: float | None = None, user: str = "admin") -> str:
    """A fresh session cookie value for ``user`` (a name has no ``~`` or ``.``), signed with ``token``."""
    expires = int((time.time() if now is None else now) + MAX_AGE_S)
    payload = f"{secrets.token_urlsafe(24)}~{user}.{expires}"
    return f"{payload}.{_sign(token, payload)}"


def valid_session(value: str | None, token: str, now: float | None = None) -> str | None:
    """The user of ``value`` when it is a session cookie signed for ``token`` that has not
    expired; None otherwise."""
    if not value or value.count(".") != 2:
        return None
    payload, signature = value.rsplit(".", 1)
    if not hmac.compare_digest(signature.encode(), _sign(token, payload).encode()):
        return None
    session, expires = payload.rsplit(".", 1)
    if not (expires.isdigit() and int(expires) > (time.time() if now is None else now)):
        return None
    return session.partition("~")[2] or None


class LoginLimiter:
    """At most MAX_FAILURES failed sign-ins per client within FAILURE_WINDOW_S."""

    def __init__(self) -> None:
        self._failures: defaultdict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allowed(self, client: str) -> bool:
        now = time.monotonic()
        with self._lock:
            times = self._failures[client]
            while times and now - times[0] > FAILURE_WINDOW_S:
                times.popleft()
            if not times:
                del self._failures[client]  # the table holds only clients that failed lately
            return len(times) < MAX_FAILURES

    def failed(self, client: str) -> None:
        with self._lock:
            self._failures[client].append(time.monotonic())
