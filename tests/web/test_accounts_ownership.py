"""Roles and ownership: another member's private items are 404 on every route that takes their
id, team items are shared, a viewer creates nothing, the admin sees everything."""

from __future__ import annotations

import pytest

from tests.conftest import make_image_folder, open_client
from tests.web.accounts_helpers import make_team, planted_model


@pytest.fixture
def team(settings):
    with open_client(settings, run_scheduler=False) as client:
        yield make_team(client.app)


def new_dataset(client, settings, **fields) -> str:
    folder = make_image_folder(settings.data_roots[0] / "pets")
    response = client.post("/api/datasets", json={"name": "pets", "train_folder": str(folder),
                                                  "width": 16, "height": 16, **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def id_routes(dataset: str, model: str) -> list[tuple[str, str]]:
    """Every route a client reaches with a dataset's or a model's id."""
    return [("GET", f"/api/jobs/{dataset}"), ("GET", f"/api/datasets/{dataset}"),
            ("GET", f"/api/jobs/{dataset}/log"), ("GET", f"/api/jobs/{dataset}/hardware"),
            ("GET", f"/api/jobs/{dataset}/events"), ("POST", f"/api/jobs/{dataset}/abort"),
            ("POST", f"/api/jobs/{dataset}/resume"), ("DELETE", f"/api/jobs/{dataset}"),
            ("PATCH", f"/api/jobs/{dataset}"), ("GET", f"/api/datasets/{dataset}/mean.png"),
            ("GET", f"/api/datasets/{dataset}/images"), ("GET", f"/api/datasets/{dataset}/images/train/0.png"),
            ("GET", f"/api/datasets/{dataset}/images/train/0/overlay.png"),
            ("POST", f"/api/datasets/{dataset}/append"), ("GET", f"/datasets/{dataset}"),
            ("GET", f"/api/models/{model}"), ("GET", f"/api/jobs/{model}"),
            ("GET", f"/api/models/{model}/download"), ("POST", f"/api/models/{model}/export"),
            ("GET", f"/api/models/{model}/export/onnx"), ("POST", f"/api/models/{model}/classify"),
            ("POST", f"/api/models/{model}/detect"), ("POST", f"/api/models/{model}/segment"),
            ("POST", f"/api/models/{model}/evaluate"),
            ("POST", f"/api/models/{model}/classify-many"), ("GET", f"/api/models/{model}/inference"),
            ("GET", f"/api/jobs/compare?ids={model}"), ("GET", f"/models/{model}"),
            ("GET", f"/models/{model}/classify"), ("DELETE", f"/api/jobs/{model}")]


def test_a_members_private_items_are_404_to_another_member(team, settings):
    dataset = new_dataset(team.alice, settings)
    model = planted_model(team.app, "alice")
    for method, url in id_routes(dataset, model):
        body = {"json": {}} if method in ("POST", "PATCH") else {}
        response = team.bob.request(method, url, **body)
        assert response.status_code == 404, (method, url, response.status_code, response.text)
    for client in (team.bob, team.vera):
        assert client.get("/api/jobs").json()["jobs"] == []
        assert client.get("/api/datasets").json()["datasets"] == []
        assert client.get("/api/models").json()["models"] == []
    assert team.alice.get(f"/api/datasets/{dataset}").status_code == 200  # still there, untouched
    assert team.alice.get(f"/api/models/{model}").status_code == 200


def test_a_missing_id_and_a_private_one_read_the_same(team, settings):
    dataset = new_dataset(team.alice, settings)
    hidden = team.bob.get(f"/api/jobs/{dataset}").json()["detail"]
    missing = team.bob.get("/api/jobs/nosuchjob").json()["detail"]
    assert hidden == missing.replace("nosuchjob", dataset)


def test_team_items_are_shared_and_only_their_owner_changes_them(team, settings):
    dataset = new_dataset(team.alice, settings, visibility="team")
    document = team.bob.get(f"/api/datasets/{dataset}").json()
    assert (document["owner"], document["visibility"]) == ("alice", "team")
    assert [d["id"] for d in team.vera.get("/api/datasets").json()["datasets"]] == [dataset]
    refused = team.bob.delete(f"/api/jobs/{dataset}")
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert team.vera.post(f"/api/jobs/{dataset}/abort").status_code == 403
    assert team.bob.get(f"/api/jobs/{dataset}").status_code == 200  # nothing changed
    assert team.alice.delete(f"/api/jobs/{dataset}").status_code == 200


def test_visibility_is_patched_by_the_owner(team, settings):
    dataset = new_dataset(team.alice, settings)
    assert team.bob.get(f"/api/jobs/{dataset}").status_code == 404
    assert team.bob.patch(f"/api/jobs/{dataset}", json={"visibility": "team"}).status_code == 404
    patched = team.alice.patch(f"/api/jobs/{dataset}", json={"visibility": "team"})
    assert patched.status_code == 200 and patched.json()["visibility"] == "team"
    assert team.bob.get(f"/api/jobs/{dataset}").status_code == 200
    assert team.alice.patch(f"/api/jobs/{dataset}", json={"visibility": "public"}).status_code == 422


def test_a_job_cannot_name_another_members_private_dataset(team, settings):
    dataset = new_dataset(team.alice, settings)
    response = team.bob.post("/api/models", json={"name": "m", "datasets": [dataset], "networks": ["lenet"]})
    assert response.status_code == 404, response.text
    assert team.admin.get("/api/models").json()["models"] == []


def test_a_viewer_creates_nothing(team, settings):
    folder = make_image_folder(settings.data_roots[0] / "pets")
    response = team.vera.post("/api/datasets", json={"name": "pets", "train_folder": str(folder)})
    assert response.status_code == 403 and "viewer" in response.json()["detail"]
    assert team.admin.get("/api/jobs").json()["jobs"] == []


def test_the_admin_sees_and_changes_everything(team, settings):
    dataset = new_dataset(team.alice, settings)
    model = planted_model(team.app, "bob")
    assert {j["id"] for j in team.admin.get("/api/jobs").json()["jobs"]} == {dataset, model}
    assert team.admin.get(f"/api/models/{model}").json()["owner"] == "bob"
    assert team.admin.delete(f"/api/jobs/{dataset}").status_code == 200


def test_the_system_report_does_not_name_another_members_private_job(team, settings):
    dataset = new_dataset(team.alice, settings)
    assert team.app.state.ctx.store.try_lease(dataset, ["dataset:0"])
    assert dataset in team.admin.get("/api/system").text
    seen_by_bob = team.bob.get("/api/system")
    assert seen_by_bob.status_code == 200 and dataset not in seen_by_bob.text and "private" in seen_by_bob.text
