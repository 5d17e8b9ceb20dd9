"""The audit log: each action with its user, newest first, for admins only; sign-in by password."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import open_client
from tests.web.accounts_helpers import make_team
from tests.web.test_accounts_ownership import new_dataset
from trainyard.cli.main import app as cli_app
from trainyard.jobs.accounts import users
from trainyard.web.audit_trail import audited


@pytest.fixture
def team(settings):
    with open_client(settings, run_scheduler=False) as client:
        yield make_team(client.app)


def test_the_audit_log_lists_actions_newest_first_with_their_user(team, settings):
    dataset = new_dataset(team.alice, settings, visibility="team")
    assert team.alice.patch(f"/api/jobs/{dataset}", json={"tags": ["x"]}).status_code == 200
    assert team.bob.delete(f"/api/jobs/{dataset}").status_code == 403  # refused: not logged as done
    assert team.admin.delete(f"/api/jobs/{dataset}").status_code == 200
    entries = team.admin.get("/api/audit").json()["entries"]
    assert [(e["user"], e["action"], e["target"]) for e in entries[:3]] == [
        ("admin", "delete", dataset), ("alice", "patch", dataset), ("alice", "create dataset", dataset)]
    assert all(e["source"] for e in entries[:3])
    times = [e["time"] for e in entries]
    assert times == sorted(times, reverse=True)
    for client in (team.alice, team.vera):
        assert client.get("/api/audit").status_code == 403


def test_sign_in_by_password_and_a_wrong_one(team):
    users.set_password(team.app.state.ctx.store, "alice", "correct horse")
    wrong = team.alice.post("/login", data={"name": "alice", "password": "wrong horse"}, follow_redirects=False)
    assert wrong.status_code == 200 and "not right" in wrong.text and "set-cookie" not in wrong.headers
    browser = type(team.alice)(team.app, credential=False)
    signed = browser.post("/login", data={"name": "alice", "password": "correct horse", "next": "/"},
                          follow_redirects=False)
    assert signed.status_code == 303
    assert browser.get("/api/jobs").status_code == 200  # the session cookie is alice's
    assert browser.post("/logout", follow_redirects=False).status_code == 303
    assert browser.get("/api/jobs").status_code == 401  # signed out: the cookie is gone
    browser.post("/login", data={"name": "alice", "password": "correct horse"})
    users.disable(team.app.state.ctx.store, "alice")
    assert browser.get("/api/jobs").status_code == 401  # a disabled user's session ends at once
    actions = [(e["user"], e["action"]) for e in team.admin.get("/api/audit").json()["entries"]]
    assert ("alice", "sign-in") in actions and ("alice", "sign-in refused") in actions


def test_users_cli_adds_a_user_whose_token_works(settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_HOME", str(settings.home))
    runner = CliRunner()
    added = runner.invoke(cli_app, ["users", "add", "carol", "--role", "viewer", "--json"])
    assert added.exit_code == 0, added.output
    document = json.loads(added.stdout)
    assert (document["name"], document["role"]) == ("carol", "viewer") and len(document["token"]) > 20
    bad = runner.invoke(cli_app, ["users", "set-role", "carol", "root"])
    assert bad.exit_code == 2 and "no role 'root'" in bad.output
    with open_client(settings, run_scheduler=False, credential=False) as client:
        carol = type(client)(client.app, credential=False)
        carol.headers["Authorization"] = f"Bearer {document['token']}"
        assert carol.get("/api/jobs").status_code == 200
        assert carol.get("/api/audit").status_code == 403  # a viewer, not an admin
    log = runner.invoke(cli_app, ["audit", "--json"])
    assert log.exit_code == 0 and json.loads(log.stdout)["entries"][0]["action"] == "user.add"


def test_the_audit_page_is_for_admins_and_pages_name_the_user(team, settings):
    new_dataset(team.alice, settings)
    page = team.admin.get("/audit")
    assert page.status_code == 200 and "create dataset" in page.text and "alice" in page.text
    assert team.alice.get("/audit").status_code == 403
    home = team.alice.get("/")
    assert "alice (member)" in home.text and 'action="/logout"' in home.text and 'href="/audit"' not in home.text
    assert 'href="/audit"' in team.admin.get("/").text


def test_each_way_a_model_leaves_the_server_is_audited_and_reads_are_not():
    assert audited("GET", "/api/models/m1/download") == ("download", "m1")
    assert audited("POST", "/api/models/m1/export") == ("export", "m1")
    assert audited("GET", "/api/models/m1/export/onnx-int8") == ("download", "m1")
    assert audited("GET", "/api/models/m1") is None and audited("POST", "/api/models/m1/classify") is None
