"""The CLI as one user of a shared home: `trainyard login` with a personal token makes later
commands act as that user (their jobs only), `logout` makes them the home's admin again; jobs
made by the CLI carry the owner and the --visibility asked for."""

from __future__ import annotations

import json
import os
import stat

from typer.testing import CliRunner

from tests.conftest import make_image_folder
from trainyard.cli.main import app
from trainyard.jobs.accounts import users
from trainyard.jobs.store.store import Store


def test_login_acts_as_the_tokens_user_and_logout_as_the_admin(settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_HOME", str(settings.home))
    monkeypatch.setenv("TRAINYARD_DATA_ROOTS", str(settings.data_roots[0]))
    runner = CliRunner()
    settings.ensure_dirs()
    store = Store(settings.db_url)
    users.add_user(store, "admin", "admin")
    alice = json.loads(runner.invoke(app, ["users", "add", "alice", "--role", "member", "--json"]).stdout)
    folder = make_image_folder(settings.data_roots[0] / "pets")
    made = runner.invoke(app, ["dataset", "create", "--name", "pets", "--train-folder", str(folder),
                               "--size", "16x16", "--submit", "--json", "--visibility", "team"])
    assert made.exit_code == 0, made.output
    shared = json.loads(made.stdout)
    assert (shared["owner"], shared["visibility"]) == ("admin", "team")
    private = json.loads(runner.invoke(app, ["dataset", "create", "--name", "mine", "--train-folder",
                                             str(folder), "--size", "16x16", "--submit", "--json"]).stdout)
    assert private["visibility"] == "private"

    wrong = runner.invoke(app, ["login", "--token", "not-a-token-of-anyone"])
    assert wrong.exit_code == 2 and "names no user" in wrong.output
    assert runner.invoke(app, ["login", "--token", alice["token"]]).exit_code == 0
    kept = settings.home / "cli-token"
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    listed = json.loads(runner.invoke(app, ["jobs", "list", "--json"]).stdout)
    assert [j["id"] for j in listed["jobs"]] == [shared["id"]]
    hidden = runner.invoke(app, ["jobs", "show", private["id"]])
    assert hidden.exit_code == 2 and private["id"] in hidden.output

    assert runner.invoke(app, ["logout"]).exit_code == 0
    listed = json.loads(runner.invoke(app, ["jobs", "list", "--json"]).stdout)
    assert {j["id"] for j in listed["jobs"]} == {shared["id"], private["id"]}


def test_a_user_past_their_disk_quota_is_refused_a_dataset_with_exit_2(settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_HOME", str(settings.home))
    monkeypatch.setenv("TRAINYARD_DATA_ROOTS", str(settings.data_roots[0]))
    runner = CliRunner()
    settings.ensure_dirs()
    users.add_user(Store(settings.db_url), "admin", "admin")
    folder = make_image_folder(settings.data_roots[0] / "pets")
    create = ["dataset", "create", "--name", "pets", "--train-folder", str(folder), "--size", "16x16", "--submit"]
    made = json.loads(runner.invoke(app, [*create, "--json"]).stdout)
    Store(settings.db_url).update_job(made["id"], disk_bytes=2 * 2**20)  # as measured when it ended
    assert runner.invoke(app, ["users", "set-quota", "admin", "--disk", "1M"]).exit_code == 0
    refused = runner.invoke(app, create)
    assert refused.exit_code == 2
    assert "user admin is using 2.0 MiB of a 1.0 MiB disk quota" in refused.output
