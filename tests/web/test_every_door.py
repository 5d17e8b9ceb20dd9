"""A credential on every door (issue 28 point 4): with no TRAINYARD_AUTH_TOKEN the server makes
a token of its own, refuses callers without it (on localhost too), hands it to a browser through
the URL it prints, and writes it for the CLI in a file only the user can read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.live_server import free_port
from trainyard.cli.remote import credential
from trainyard.core import server_token
from trainyard.web.sessions import COOKIE


@pytest.fixture
def stranger(settings, client_for):
    """A loopback client of a server started without TRAINYARD_AUTH_TOKEN, sending nothing."""
    with client_for(settings, run_scheduler=False, credential=False) as client:
        yield client


@pytest.mark.parametrize("url", ["/api/jobs", "/api/datasets", "/api/system", "/openapi.json"])
def test_a_loopback_caller_without_the_credential_is_refused(stranger, url):
    assert not stranger.app.state.ctx.settings.auth_token  # the make-run default: no token set
    response = stranger.get(url)
    assert response.status_code == 401 and "Bearer" in response.json()["detail"]
    assert stranger.delete("/api/jobs/x").status_code == 401
    token = stranger.app.state.auth_token
    assert stranger.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_the_url_with_the_token_gives_a_session_cookie_and_drops_the_token(stranger):
    token = stranger.app.state.auth_token
    answer = stranger.get(f"/models?x=1&token={token}", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/models?x=1"
    assert token not in answer.headers["set-cookie"] and COOKIE in answer.cookies
    assert stranger.get("/api/jobs").status_code == 200  # the cookie now opens the door
    stranger.cookies.clear()
    wrong = stranger.get("/?token=not-the-token", follow_redirects=False)
    assert wrong.status_code == 303 and wrong.headers["location"].startswith("/login")
    assert COOKIE not in wrong.cookies and stranger.get("/api/jobs").status_code == 401


def test_the_token_file_is_the_users_own_and_nothing_else_is_trusted(tmp_path):
    path = server_token.write(tmp_path, "tok-" + "x" * 20)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert server_token.read(tmp_path) == "tok-" + "x" * 20
    path.chmod(0o644)  # readable by others: someone may have planted it
    assert server_token.read(tmp_path) is None
    path.unlink()
    os.mkfifo(path)  # a FIFO must not hang the CLI
    assert server_token.read(tmp_path) is None


def test_the_cli_sends_the_token_of_its_homes_server(settings):
    assert credential(settings) == ""
    server_token.write(settings.home, "from-the-file-0123")
    assert credential(settings) == "from-the-file-0123"
    assert credential(settings.model_copy(update={"auth_token": "set-by-the-user-0"})) == "set-by-the-user-0"


@pytest.mark.slow  # starts `trainyard serve` (a second or two)
def test_serve_prints_a_url_with_its_token_and_writes_it_0600_for_the_cli(tmp_path):
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(tmp_path),
           "TRAINYARD_AUTH_TOKEN": ""}
    server = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", "serve", "--port", str(port)],
                              env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while server_token.read(home) is None:
            assert time.monotonic() < deadline and server.poll() is None, "serve wrote no token file"
            time.sleep(0.1)
        token = server_token.read(home)
        assert stat.S_IMODE(server_token.token_file(home).stat().st_mode) == 0o600
        url = f"http://127.0.0.1:{port}/api/jobs"
        while True:
            try:
                urllib.request.urlopen(url, timeout=5)
                raise AssertionError("the API answered a caller without the credential")
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        asked = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(asked, timeout=10) as response:
            assert response.status == 200
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=60)
    assert f"http://127.0.0.1:{port}/?token={token}" in stderr
    assert not server_token.token_file(home).exists()  # gone with its server
