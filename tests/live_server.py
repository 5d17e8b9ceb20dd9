"""A trainyard app served by uvicorn in a thread on a free 127.0.0.1 port.

Used by the browser tests and by the benchmarks that time real HTTP requests.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# The credential of the servers the browser tests start: every page needs one (web/auth.py).
BROWSER_TOKEN = "browser-tests-token-0123456789"
BROWSER_HEADERS = {"Authorization": f"Bearer {BROWSER_TOKEN}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(server, method: str, path: str, body: dict | None = None) -> dict:
    """A JSON request to ``server`` (anything with a ``url``, such as the live_server fixture)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **credential(server)})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def credential(server) -> dict[str, str]:
    """The Authorization header for ``server`` (its ``token``, or its ``app``'s), {} without one."""
    token = getattr(server, "token", None) or getattr(getattr(getattr(server, "app", None), "state", None),
                                                       "auth_token", None)
    return {"Authorization": f"Bearer {token}"} if token else {}


def wait_until_up(url: str, alive: Callable[[], bool], timeout: float = 30.0) -> None:
    """Return once ``url`` answers; RuntimeError if ``alive()`` turns false or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("the server exited before it answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers (a 401 to a caller without the credential)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the server did not answer at {url} within {timeout} s")


@contextmanager
def serving(app) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="trainyard-test-server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url + "/api/system", thread.is_alive)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=15)
