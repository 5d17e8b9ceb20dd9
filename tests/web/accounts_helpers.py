"""A team on one server for the accounts tests: an admin (the server's token), two members and
a viewer, each a client with a personal token, and items made by member A."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi.testclient import TestClient

from trainyard.core.ownership import Actor
from trainyard.core.status import Status
from trainyard.jobs.accounts import users
from trainyard.jobs.store.actor import acting
from trainyard.jobs.store.store import Job


@dataclass
class Team:
    app: object
    admin: TestClient
    alice: TestClient
    bob: TestClient
    vera: TestClient
    tokens: dict


def client_of(app, token: str) -> TestClient:
    client = TestClient(app, credential=False)
    client.headers["Authorization"] = f"Bearer {token}"
    return client


def make_team(app) -> Team:
    store = app.state.ctx.store
    tokens = {}
    for name, role in (("alice", "member"), ("bob", "member"), ("vera", "viewer")):
        users.add_user(store, name, role)
        tokens[name] = users.new_token(store, name, "tests")
    return Team(app, client_of(app, app.state.auth_token), client_of(app, tokens["alice"]),
                client_of(app, tokens["bob"]), client_of(app, tokens["vera"]), tokens)


def planted_model(app, owner: str, role: str = "member", visibility: str = "private") -> str:
    """A finished model job of ``owner``'s, written into the store as that user would make it."""
    job_id = f"m{time.time_ns()}"
    job = Job(id=job_id, kind="model", name="planted", status=Status.DONE, needs={"pool": "cpu"},
              summary={}, created_at=time.time(), visibility=visibility)
    app.state.ctx.manager.folder(job_id).create()
    with acting(Actor(owner, role)):
        app.state.ctx.store.add_job(job)
    return job_id
