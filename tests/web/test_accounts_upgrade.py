"""A home made before accounts: its server token is the first admin's, its jobs are kept (the
first admin's, private); and credentials that name no one are refused."""

from __future__ import annotations

import sqlite3
import time

from sqlalchemy import text

from tests.conftest import open_client
from tests.web.accounts_helpers import client_of, make_team
from trainyard.core.status import Status
from trainyard.jobs.accounts import users
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings

OLD_TOKEN = "the-old-server-token"


def old_home(settings: Settings) -> None:
    """A store as trainyard wrote it before accounts: a job, no owner column, no users."""
    settings.ensure_dirs()
    store = Store(settings.db_url)
    store.add_job(Job(id="old1", kind="dataset", name="old", status=Status.DONE, needs={}, summary={},
                      created_at=time.time()))
    store.engine.dispose()
    with sqlite3.connect(settings.home / "trainyard.db") as db:
        for statement in ("DROP TABLE users", "DROP TABLE api_tokens", "DROP TABLE audit_log",
                          "DROP INDEX ix_jobs_owner", "ALTER TABLE jobs DROP COLUMN owner",
                          "ALTER TABLE jobs DROP COLUMN visibility"):
            db.execute(statement)


def test_an_old_home_upgrades_in_place_and_its_token_is_the_admins(tmp_path):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], auth_token=OLD_TOKEN)
    old_home(settings)
    with open_client(settings, run_scheduler=False, credential=False) as client:
        admin = client_of(client.app, OLD_TOKEN)
        job = admin.get("/api/jobs/old1").json()
        assert (job["name"], job["owner"], job["visibility"]) == ("old", "admin", "private")
        assert users.get_user(client.app.state.ctx.store, "admin").role == "admin"
        team = make_team(client.app)
        assert team.alice.get("/api/jobs/old1").status_code == 404
    # The token was stored as the admin's own: it works without TRAINYARD_AUTH_TOKEN too.
    with open_client(settings.model_copy(update={"auth_token": ""}), run_scheduler=False,
                     credential=False) as client:
        assert client_of(client.app, OLD_TOKEN).get("/api/jobs/old1").status_code == 200


def test_a_fresh_home_makes_the_first_admin_with_the_servers_token(settings):
    with open_client(settings, run_scheduler=False, credential=False) as client:
        token = client.app.state.auth_token
        page = client.get(f"/?token={token}", follow_redirects=False)
        assert page.status_code == 303 and "token" not in page.headers["location"]
        assert client.get("/api/jobs").status_code == 200  # the session cookie, the admin's
        assert [u.name for u in users.list_users(client.app.state.ctx.store)] == ["admin"]


def test_credentials_that_name_no_one_are_refused(settings):
    with open_client(settings, run_scheduler=False) as client:
        team = make_team(client.app)
        store = client.app.state.ctx.store
        token_id = users.list_tokens(store, "alice")[0].id
        users.revoke_token(store, "alice", token_id)
        revoked = team.alice.get("/api/jobs")
        assert revoked.status_code == 401 and "Bearer" in revoked.json()["detail"]
        users.disable(store, "bob")
        assert team.bob.get("/api/jobs").status_code == 401
        with store.session.begin() as s:  # a role written by hand that is no role
            s.execute(text("UPDATE users SET role = 'root' WHERE name = 'vera'"))
        assert team.vera.get("/api/jobs").status_code == 401
        assert team.admin.get("/api/jobs").status_code == 200
