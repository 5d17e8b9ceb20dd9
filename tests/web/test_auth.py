"""TRAINYARD_AUTH_TOKEN: with a token every page and API call needs it; without one, serve stays local."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from trainyard.cli.main import app as cli_app
from trainyard.settings import Settings

TOKEN = "s3cret-token"


@pytest.fixture
def guarded(tmp_path, client_for):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=TOKEN)
    with client_for(settings, run_scheduler=False, credential=False) as client:
        yield client


def bearer(token: str = TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("url", ["/api/jobs", "/api/datasets", "/api/system", "/api/jobs/x/events",
                                 "/docs", "/openapi.json"])
def test_api_without_the_token_is_401(guarded, url):
    response = guarded.get(url)
    assert response.status_code == 401
    assert "Bearer" in response.json()["detail"]
    assert response.headers["www-authenticate"] == "Bearer"


def test_api_with_the_bearer_token_works(guarded):
    response = guarded.get("/api/jobs", headers=bearer())
    assert response.status_code == 200
    assert response.json()["jobs"] == []


def test_api_with_a_wrong_token_is_401(guarded):
    assert guarded.get("/api/jobs", headers=bearer("guess")).status_code == 401
    assert guarded.get("/api/jobs", headers={"Authorization": TOKEN}).status_code == 401  # no "Bearer"


def test_writes_need_the_token_too(guarded, tmp_path):
    response = guarded.post("/api/datasets", json={"name": "x", "train_folder": str(tmp_path)})
    assert response.status_code == 401
    assert guarded.get("/api/jobs", headers=bearer()).json()["jobs"] == []


def test_event_stream_works_with_the_token(guarded):
    """The pages' live updates (SSE) pass through the token check, by header or cookie."""
    from trainyard.core.events import EventWriter

    ctx = guarded.app.state.ctx
    job = ctx.manager.create("dataset", "ended", {"kind": "dataset"}, needs={"pool": "dataset"})
    with EventWriter(ctx.manager.folder(job.id).work) as events:
        events.status("running")
        events.status("done")
    ctx.store.update_job(job.id, status="done")
    url = f"/api/jobs/{job.id}/events"
    assert guarded.get(url).status_code == 401
    stream = guarded.get(url, headers=bearer())
    assert stream.status_code == 200
    assert stream.text.count("event: status") == 2 and stream.text.endswith('event: end\ndata: {"status": "done"}\n\n')
    guarded.post("/login", data={"token": TOKEN, "next": "/"})
    assert "event: end" in guarded.get(url).text


@pytest.mark.parametrize("url", ["/", "/datasets/new", "/datasets/abc", "/loginx"])
def test_pages_without_the_token_redirect_to_login(guarded, url):
    response = guarded.get(url, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"/login?next={url}"


def test_login_page_and_static_files_are_open(guarded):
    login = guarded.get("/login")
    assert login.status_code == 200 and 'name="token"' in login.text
    assert guarded.get("/static/app.css").status_code == 200


def test_login_with_the_right_token_sets_a_cookie_that_opens_pages_and_api(guarded):
    response = guarded.post("/login", data={"token": TOKEN, "next": "/datasets/new"}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/datasets/new"
    cookie = response.headers["set-cookie"]
    assert "httponly" in cookie.lower()
    home = guarded.get("/", follow_redirects=False)
    assert home.status_code == 200
    assert "Datasets and models" in home.text
    assert guarded.get("/api/jobs").status_code == 200  # the browser's fetch() calls send the cookie


def test_login_brings_the_user_back_to_the_page_asked_for(guarded):
    asked = guarded.get("/datasets/new?parent=abc", follow_redirects=False)
    login_page = guarded.get(asked.headers["location"])
    assert 'name="next" value="/datasets/new?parent=abc"' in login_page.text
    response = guarded.post("/login", data={"token": TOKEN, "next": "/datasets/new?parent=abc"},
                            follow_redirects=False)
    assert response.headers["location"] == "/datasets/new?parent=abc"


def test_login_with_a_wrong_token_shows_an_error_and_sets_no_cookie(guarded):
    response = guarded.post("/login", data={"token": "guess", "next": "/"}, follow_redirects=False)
    assert response.status_code == 200
    assert "That token is not right." in response.text
    assert "set-cookie" not in response.headers
    assert guarded.get("/", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example/", "/\\evil.example"])
def test_login_never_redirects_off_site(guarded, target):
    response = guarded.post("/login", data={"token": TOKEN, "next": target}, follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    # Browsers read a backslash as a slash, so "/\\host" would leave the site as "//host" does.
    assert location.startswith("/") and not location.startswith("//") and "\\" not in location


def test_without_a_token_everything_is_open(client_for, settings):
    with client_for(settings, run_scheduler=False) as client:
        assert client.get("/api/jobs").status_code == 200
        assert client.get("/", follow_redirects=False).status_code == 200


# -- trainyard serve ------------------------------------------------------------------------------

@pytest.fixture
def served(monkeypatch) -> list[dict]:
    """Calls to uvicorn.run, which is replaced so that serve returns instead of serving."""
    calls: list[dict] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kwargs: calls.append(kwargs))
    return calls


def test_serve_refuses_a_public_address_without_a_token(cli_env, served):
    result = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0"], env=cli_env)
    assert result.exit_code == 2
    assert "TRAINYARD_AUTH_TOKEN" in result.stderr
    assert "0.0.0.0" in result.stderr
    assert served == []


def test_serve_binds_localhost_by_default(cli_env, served):
    result = CliRunner().invoke(cli_app, ["serve", "--port", "5123"], env=cli_env)
    assert result.exit_code == 0, result.output
    # SIGTERM ends it within the grace period (TRAINYARD_ABORT_GRACE_S), whatever its requests do
    assert served == [{"host": "127.0.0.1", "port": 5123, "log_level": "warning", "timeout_graceful_shutdown": 10}]


def test_serve_on_a_public_address_with_a_token(cli_env, served):
    env = {**cli_env, "TRAINYARD_AUTH_TOKEN": TOKEN}
    result = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0"], env=env)
    assert result.exit_code == 0, result.output
    assert served[0]["host"] == "0.0.0.0"


def test_serve_refuses_a_public_address_from_the_environment_too(cli_env, served):
    env = {**cli_env, "TRAINYARD_HOST": "0.0.0.0"}
    result = CliRunner().invoke(cli_app, ["serve"], env=env)
    assert result.exit_code == 2
    assert "TRAINYARD_AUTH_TOKEN" in result.stderr
