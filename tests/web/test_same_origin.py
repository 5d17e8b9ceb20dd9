"""Adversarial requests of the kind a hostile web page or a token guesser makes.

DNS rebinding (a foreign Host), cross-site writes in localhost mode (no token), forged or
tampered session cookies, token guessing at speed, short tokens, and the token leaking into
the processes that run user code.
"""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from trainyard.cli.main import app as cli_app
from trainyard.core.paths import JobFolder
from trainyard.jobs.runs.runner import launch
from trainyard.jobs.store.confinement import Confinement
from trainyard.settings import Settings
from trainyard.web import sessions
from trainyard.web.sessions import COOKIE, new_session, valid_session

TOKEN = "a-long-enough-token"


@pytest.fixture
def local(tmp_path, client_for):
    """The default mode: no token, bound to 127.0.0.1, no extra host names."""
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], allowed_hosts=[])
    with client_for(settings, run_scheduler=False) as client:
        client.headers["host"] = "127.0.0.1:5000"
        yield client


@pytest.fixture
def guarded(tmp_path, client_for):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN)
    with client_for(settings, run_scheduler=False, credential=False) as client:
        yield client


@pytest.mark.parametrize("host", ["evil.example", "evil.example:5000", "127.0.0.1.evil.example", "0.0.0.0:5000"])
def test_a_foreign_host_name_is_refused(local, host):
    """DNS rebinding: another site's name resolving to 127.0.0.1 must not get answers."""
    response = local.get("/api/jobs", headers={"host": host})
    assert response.status_code == 400
    assert "TRAINYARD_ALLOWED_HOSTS" in response.json()["detail"]


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "localhost:5000", "LOCALHOST", "[::1]:5000", "localhost."])
def test_the_bound_names_are_answered(local, host):
    assert local.get("/api/jobs", headers={"host": host}).status_code == 200


def test_the_configured_host_and_allowed_hosts_are_answered(tmp_path, client_for):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN,
                        host="trainer.lan", allowed_hosts=["proxy.example"])
    with client_for(settings, run_scheduler=False) as client:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/api/jobs", headers={**auth, "host": "trainer.lan:5000"}).status_code == 200
        assert client.get("/api/jobs", headers={**auth, "host": "proxy.example"}).status_code == 200
        assert client.get("/api/jobs", headers={**auth, "host": "evil.example"}).status_code == 400


def _import(client, **headers):
    return client.post("/api/models/import", headers=headers,
                       files={"file": ("m.tar.gz", b"not an archive", "application/gzip")})


@pytest.mark.parametrize("headers", [{"origin": "https://evil.example"}, {"origin": "null"},
                                     {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"},
                                     {"origin": "http://127.0.0.1:6000"}])
def test_cross_site_writes_are_refused_without_a_token(local, headers):
    """A page of another origin POSTing an archive to import gets 403, before anything runs."""
    response = _import(local, **headers)
    assert response.status_code == 403
    assert "cross-site request refused" in response.json()["detail"]
    assert local.get("/api/jobs").json()["jobs"] == []


def test_same_origin_writes_and_scripts_pass(local):
    # The server's own pages send these; scripts and curl send neither. Both reach the handler.
    assert _import(local, origin="http://127.0.0.1:5000", **{"sec-fetch-site": "same-origin"}).status_code == 400
    assert _import(local).status_code == 400


def test_cross_site_reads_pass_but_writes_do_not_with_a_token_either(guarded):
    auth = {"Authorization": f"Bearer {TOKEN}", "origin": "https://evil.example"}
    assert guarded.get("/api/jobs", headers=auth).status_code == 200
    assert _import(guarded, **auth).status_code == 403


def test_every_response_forbids_inline_script(local):
    policy = local.get("/").headers["content-security-policy"]
    script = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
    assert script.split() == ["script-src", "'self'"]
    assert "default-src 'self'" in policy


# -- sessions ------------------------------------------------------------------------------------

def test_the_session_cookie_is_not_the_token_and_cannot_be_forged(guarded):
    response = guarded.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
    value = response.cookies[COOKIE]
    assert TOKEN not in value and TOKEN not in response.headers["set-cookie"]
    assert valid_session(value, TOKEN)
    guarded.cookies.clear()
    for forged in (TOKEN, value[:-1] + ("0" if value[-1] != "0" else "1"), "a.99999999999.b", ""):
        guarded.cookies.set(COOKIE, forged)
        assert guarded.get("/api/jobs").status_code == 401, forged
    assert not valid_session(value, "another-token-of-length")  # a new token ends old sessions


def test_sessions_expire():
    cookie = new_session(TOKEN, now=1000.0)
    assert valid_session(cookie, TOKEN, now=1000.0 + sessions.MAX_AGE_S - 1)
    assert not valid_session(cookie, TOKEN, now=1000.0 + sessions.MAX_AGE_S + 1)
    payload, _ = cookie.rsplit(".", 1)
    sid = payload.split(".")[0]
    assert not valid_session(f"{sid}.{2**40}.{cookie.rsplit('.', 1)[1]}", TOKEN)  # expiry is signed


def test_the_cookie_is_secure_over_https(tmp_path):
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN)
    with TestClient(create_app(settings, run_scheduler=False), base_url="https://testserver") as client:
        response = client.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
    assert "secure" in response.headers["set-cookie"].lower()


def test_guessing_the_token_is_rate_limited(guarded):
    for guess in range(sessions.MAX_FAILURES):
        response = guarded.post("/login", data={"token": f"guess-{guess}", "next": "/"})
        assert response.status_code == 200 and "That token is not right." in response.text
    refused = guarded.post("/login", data={"token": "one-more-guess", "next": "/"}, follow_redirects=False)
    assert refused.status_code == 429 and "Too many wrong tokens" in refused.text
    assert COOKIE not in refused.cookies
    # The limiter slows the guesser, never the right credential (issue 42).
    signed_in = guarded.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
    assert signed_in.status_code == 303 and COOKIE in signed_in.cookies


# -- the token itself ----------------------------------------------------------------------------

def test_short_tokens_are_refused_without_echoing_them(cli_env, monkeypatch):
    with pytest.raises(ValidationError):
        Settings(auth_token="x")
    monkeypatch.setattr("uvicorn.run", lambda app, **kwargs: pytest.fail("served with a short token"))
    result = CliRunner().invoke(cli_app, ["serve"], env={**cli_env, "TRAINYARD_AUTH_TOKEN": "shorttoken"})
    assert result.exit_code == 2
    assert "at least 12 characters" in result.stderr and "shorttoken" not in result.output


def test_job_processes_never_get_the_token(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_AUTH_TOKEN", TOKEN)
    folder = JobFolder(tmp_path / "job")
    folder.path.mkdir()
    proc = launch([sys.executable, "-c", "import os; print(os.environ.get('TRAINYARD_AUTH_TOKEN'))"],
                  folder, None, Confinement(user_code=False))
    assert proc.wait(timeout=60) == 0
    assert (folder.output).read_text().strip() == "None"


def test_wrong_tokens_are_not_echoed(guarded):
    response = guarded.get("/api/jobs", headers={"Authorization": "Bearer guess-xyz-123"})
    assert response.status_code == 401 and "guess-xyz-123" not in response.text
    page = guarded.post("/login", data={"token": "guess-xyz-123", "next": "/"})
    assert "guess-xyz-123" not in page.text

