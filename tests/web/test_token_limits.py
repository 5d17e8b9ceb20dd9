"""Guessing the token: bearer headers are limited like sign-ins, per client and per local
account (so one account on the machine cannot lock the others out), and a blank token is refused."""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from tests.live_server import free_port
from trainyard.cli.main import app as cli_app
from trainyard.settings import Settings
from trainyard.web.peers import client_key
from trainyard.web.sessions import MAX_FAILURES

TOKEN = "s3cret-token-for-limits"


@pytest.fixture
def guarded(tmp_path, client_for):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN)
    with client_for(settings, run_scheduler=False, credential=False) as client:
        yield client


def test_bearer_guessing_is_limited_like_sign_in(guarded):
    for attempt in range(MAX_FAILURES):
        response = guarded.get("/api/jobs", headers={"Authorization": f"Bearer guess-{attempt}"})
        assert response.status_code == 401
    limited = guarded.get("/api/jobs", headers={"Authorization": "Bearer one-more-guess"})
    assert limited.status_code == 429 and "too many wrong tokens" in limited.json()["detail"]
    # One limiter for both doors: the form does not give the guesser more tries.
    assert guarded.post("/login", data={"token": "guess", "next": "/"}).status_code == 429


def test_the_right_token_is_let_in_after_wrong_ones(guarded):
    """The limiter slows the failing source, never the right credential: five wrong guesses from
    the owner's own address locked the owner out for two minutes."""
    for attempt in range(MAX_FAILURES + 1):
        guarded.get("/api/jobs", headers={"Authorization": f"Bearer guess-{attempt}"})
    assert guarded.get("/api/jobs", headers={"Authorization": "Bearer still-wrong"}).status_code == 429
    assert guarded.get("/api/jobs", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    signed_in = guarded.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
    handed = guarded.get(f"/?token={TOKEN}", follow_redirects=False)
    assert handed.status_code == 303 and "trainyard_session" in handed.headers.get("set-cookie", "")
    assert guarded.post("/login", data={"token": "guess", "next": "/"}).status_code == 429


def test_a_loopback_client_is_told_apart_by_its_account():
    with socket.create_server(("127.0.0.1", 0)) as server, socket.create_connection(server.getsockname()) as conn:
        host, port = conn.getsockname()
        assert client_key(host, port) == f"127.0.0.1 uid {os.getuid()}"
    assert client_key("192.0.2.7", 5555) == "192.0.2.7"  # another machine: its address


def guess_as(uid: int, url: str, tries: int) -> int:
    """The HTTP status of the last of ``tries`` wrong bearer tokens sent by a child running as ``uid``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: another local account, sending wrong tokens
        code = 0
        try:
            os.setgid(uid)
            os.setuid(uid)
            for i in range(tries):
                request = urllib.request.Request(url + "/api/jobs", headers={"Authorization": f"Bearer guess{i}"})
                try:
                    urllib.request.urlopen(request, timeout=30)
                    code = 200
                except urllib.error.HTTPError as exc:
                    code = exc.code
        finally:
            os.write(write, str(code).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        code = int(answer.read() or 0)
    os.waitpid(pid, 0)
    return code


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a second local account (run as root to switch to nobody)")
def test_one_local_account_cannot_lock_another_out(tmp_path):
    import uvicorn

    from trainyard.web.app import create_app

    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, run_scheduler=False), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.1)
        assert guess_as(65534, url, MAX_FAILURES + 1) == 429  # the guessing account is locked out ...
        request = urllib.request.Request(url + "/api/jobs", headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=30) as response:  # ... this one is not
            assert response.status == 200
        wrong = urllib.request.Request(url + "/api/jobs", headers={"Authorization": "Bearer mine-is-wrong"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(wrong, timeout=30)
        assert refused.value.code == 401  # its own failures start from zero
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_a_token_of_spaces_is_refused_at_start_up(cli_env, monkeypatch):
    monkeypatch.setattr("uvicorn.run", lambda app, **kwargs: pytest.fail("served with a blank token"))
    with pytest.raises(ValidationError, match="only spaces"):
        Settings(auth_token=" " * 20)
    result = CliRunner().invoke(cli_app, ["serve"], env={**cli_env, "TRAINYARD_AUTH_TOKEN": " " * 20})
    assert result.exit_code == 2 and "only spaces" in result.stderr
