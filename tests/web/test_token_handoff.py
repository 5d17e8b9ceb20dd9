"""``trainyard serve`` takes the token out of its own environment: /proc/<pid>/environ of the
server never shows it, and the server still asks for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

TOKEN = "a-token-that-no-process-may-read-back"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_of(url: str, token: str | None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_the_served_process_holds_the_token_only_in_memory(tmp_path):
    port = free_port()
    env = {**os.environ, "TRAINYARD_HOME": str(tmp_path), "TRAINYARD_AUTH_TOKEN": TOKEN}
    server = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", "serve", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/api/jobs"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            try:
                status_of(url, None)
                break
            except OSError:
                time.sleep(0.5)
        assert status_of(url, None) == 401 and status_of(url, TOKEN) == 200
        with open(f"/proc/{server.pid}/environ", "rb") as f:  # the same pid: re-exec'd in place
            environ = f.read()
        assert TOKEN.encode() not in environ and b"TRAINYARD_AUTH_TOKEN" not in environ
        with open(f"/proc/{server.pid}/cmdline", "rb") as f:
            assert TOKEN.encode() not in f.read()
        assert not any(TOKEN in target for target in open_files(server.pid))
    finally:
        server.terminate()
        server.wait(timeout=30)


def open_files(pid: int) -> list[str]:
    """What the process's file descriptors point at; one closed between the listing and the read
    (the server keeps serving meanwhile) is gone, not an error."""
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return targets
