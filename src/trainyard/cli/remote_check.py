"""A command's network checks through a running server's checker, which is warm.

`trainyard train --submit` checks that the network runs on the dataset before it queues the job
(jobs/kinds/precheck.py), and `trainyard import` checks the archive's network.py. Checked in the
command's own process, a first check starts a checker of its own: a torch start, 18-47 s on a
busy machine with nothing printed. A server already has
a warm checker (about a second), and its answers are the same (they depend only on the request),
so the command asks it first (``POST /api/networks/inspect``), and, with no server to ask, says
that the check here takes a while before it starts one.
"""

from __future__ import annotations

import functools
import json
import urllib.request
from collections.abc import Callable

from trainyard.cli.remote import ANSWER_TIMEOUT_S, _address, _listening, credential
from trainyard.settings import Settings


def server_running(settings: Settings) -> bool:
    """Whether this home's server listens (its checker, warm, can answer this command's checks)."""
    return _listening(*_address(settings))


def use_server_checker(settings: Settings, say: Callable[[str], None]) -> None:
    """From now on, this process's network checks ask the server first (networks/cache.py)."""
    from trainyard.networks import cache

    cache.ask_first = functools.partial(ask_server, settings, say)


def ask_server(settings: Settings, say: Callable[[str], None], request: dict) -> dict | None:
    """The server's answer to a network check, or None (after saying so) to check here."""
    host, port = _address(settings)
    if _listening(host, port):
        server = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        answer = _post_json(f"{server}/api/networks/inspect",
                            {k: v for k, v in request.items() if k != "what"}, credential(settings))
        if answer is not None:
            return answer
    what = f"network {request['network']}" if request.get("network") else "the custom network"
    height, width = request.get("input_size") or (request.get("image_size"),) * 2
    say(f"checking that {what} runs on {request['in_channels']}x{height}x{width} input: starting a network "
        "checker (it loads torch once: some seconds; a running `trainyard serve` answers at once)")
    return None


def _post_json(url: str, body: dict, token: str) -> dict | None:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):  # refused, busy (429), an HTTP error status, not JSON: check here
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("ok"), bool) else None
