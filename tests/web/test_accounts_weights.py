"""Weights entries have an owner and a visibility: another member's private entry is 404 when
listed, shown, changed, removed or named as ``pretrained``; team entries are shared; only the
owner or an admin changes one; entries stored before accounts are the first admin's."""

from __future__ import annotations

import re

import pytest

from tests.conftest import open_client
from tests.web.accounts_helpers import make_team, planted_model
from tests.web.test_accounts_ownership import new_dataset
from tests.weights.fixtures import safetensors_bytes
from trainyard.weights.store import WeightsStore

NETWORK = "timm:test_resnet"


@pytest.fixture
def team(settings):
    with open_client(settings, run_scheduler=False) as client:
        yield make_team(client.app)


def imported(client, name: str, **fields) -> dict:
    response = client.post("/api/weights", data={"name": name, "network": NETWORK, **fields},
                           files={"file": ("w.safetensors", safetensors_bytes(NETWORK, num_classes=4))})
    assert response.status_code == 201, response.text
    return response.json()


def own_names(client) -> list[str]:
    return [row["name"] for row in client.get("/api/weights", params={"source": "mine"}).json()["weights"]]


def test_a_members_private_weights_are_404_to_another_member(team):
    row = imported(team.alice, "alices")
    assert (row["owner"], row["visibility"]) == ("alice", "private")
    for client in (team.bob, team.vera):
        assert own_names(client) == []
        for method, body in (("GET", {}), ("DELETE", {}), ("PATCH", {"json": {"visibility": "team"}})):
            hidden = client.request(method, "/api/weights/alices", **body)
            missing = client.request(method, "/api/weights/nobodys", **body)
            assert hidden.status_code == missing.status_code == 404, (method, hidden.text)
            assert hidden.json()["detail"] == missing.json()["detail"].replace("nobodys", "alices")
    assert own_names(team.admin) == ["alices"]  # the admin sees all
    assert team.alice.get("/api/weights/alices").json()["present"]  # untouched


def test_team_weights_are_shared_and_only_their_owner_changes_them(team):
    imported(team.alice, "shared", visibility="team")
    assert own_names(team.bob) == own_names(team.vera) == ["shared"]
    refused = team.bob.delete("/api/weights/shared")
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert team.bob.patch("/api/weights/shared", json={"visibility": "private"}).status_code == 403
    made_private = team.alice.patch("/api/weights/shared", json={"visibility": "private"})
    assert made_private.status_code == 200 and made_private.json()["visibility"] == "private"
    assert own_names(team.bob) == []
    assert team.bob.post("/api/weights", data={"name": "shared", "network": NETWORK},
                         files={"file": ("w.safetensors", b"x" * 10)}).status_code == 409  # never overwritten
    entries = team.admin.get("/api/audit").json()["entries"]
    assert any(e["action"] == "weights visibility" and e["user"] == "alice" and e["target"] == "shared"
               for e in entries)
    assert team.alice.delete("/api/weights/shared").status_code == 200
    assert team.admin.get("/api/weights/shared").status_code == 404


def test_another_members_private_weights_cannot_be_named_as_pretrained(team, settings):
    imported(team.alice, "alices")
    dataset = new_dataset(team.admin, settings, visibility="team", width=32, height=32)
    body = {"name": "m", "datasets": [dataset], "networks": [NETWORK]}
    hidden = team.bob.post("/api/models", json={**body, "pretrained": "alices"})
    missing = team.bob.post("/api/models", json={**body, "pretrained": "nobodys"})
    assert hidden.status_code == missing.status_code == 404, hidden.text
    assert hidden.json()["detail"] == missing.json()["detail"].replace("nobodys", "alices")
    mine = team.alice.post("/api/models", json={**body, "pretrained": "alices"})
    assert mine.status_code == 201, mine.text


def test_another_members_private_model_cannot_be_named_as_pretrained(team, settings):
    model = planted_model(team.app, "alice")
    dataset = new_dataset(team.admin, settings, visibility="team")
    body = {"name": "m", "datasets": [dataset], "networks": ["lenet"]}
    hidden = team.bob.post("/api/models", json={**body, "pretrained": model})
    missing = team.bob.post("/api/models", json={**body, "pretrained": "m000000"})
    assert hidden.status_code == missing.status_code == 404, hidden.text
    assert hidden.json()["detail"] == missing.json()["detail"].replace("m000000", model)


def test_weights_stored_before_accounts_are_the_first_admins(team, settings, tmp_path):
    weights = tmp_path / "w.safetensors"
    weights.write_bytes(safetensors_bytes(NETWORK, num_classes=4))
    WeightsStore(settings.weights_dir).import_file("older", weights, NETWORK)  # no accounts: no owner
    assert own_names(team.bob) == []
    assert team.bob.get("/api/weights/older").status_code == 404
    row = team.admin.get("/api/weights/older").json()
    assert (row["owner"], row["visibility"]) == ("admin", "private")


def test_the_weights_page_offers_the_visibility_control_to_the_owner_and_admins_only(team):
    imported(team.alice, "shared", visibility="team")
    page = team.bob.get("/weights")
    assert page.status_code == 200
    template = re.search(r'<template id="weights-visibility-template">(.*?)</template>', page.text, re.S)
    assert template is not None
    assert re.findall(r'<option value="(\w+)">', template.group(1)) == ["private", "team"]
    # static/weights.js draws the control on the rows the API marks changeable, and the text elsewhere
    shown = {who: getattr(team, who).get("/api/weights", params={"source": "mine"}).json()["weights"][0]
             for who in ("alice", "bob", "vera", "admin")}
    assert {who: row["changeable"] for who, row in shown.items()} == \
        {"alice": True, "bob": False, "vera": False, "admin": True}
    assert all((row["owner"], row["visibility"]) == ("alice", "team") for row in shown.values())
    changed = team.admin.patch("/api/weights/shared", json={"visibility": "private"})  # an admin may
    assert changed.status_code == 200 and changed.json()["changeable"] is True
    assert team.bob.get("/api/weights/shared").status_code == 404
