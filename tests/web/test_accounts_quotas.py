"""A disk quota seen through the REST API: a member past it is refused a new dataset with a 403
that names their usage and quota; another member is not held back."""

from __future__ import annotations

import pytest

from tests.conftest import make_image_folder, open_client
from tests.web.accounts_helpers import make_team
from trainyard.jobs.accounts import users


@pytest.fixture
def team(settings):
    with open_client(settings, run_scheduler=False) as client:
        yield make_team(client.app)


def test_a_member_past_their_disk_quota_is_refused_a_new_dataset(team, settings):
    store = team.app.state.ctx.store
    folder = make_image_folder(settings.data_roots[0] / "pets")
    body = {"name": "pets", "train_folder": str(folder), "width": 16, "height": 16}
    first = team.alice.post("/api/datasets", json=body)
    assert first.status_code == 201, first.text
    store.update_job(first.json()["id"], disk_bytes=3 * 2**20)  # as measured when its build ended
    users.set_quota(store, "alice", max_disk_bytes=2**20)
    refused = team.alice.post("/api/datasets", json=body)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("user alice is using 3.0 MiB of a 1.0 MiB disk quota")
    assert len(team.alice.get("/api/datasets").json()["datasets"]) == 1  # nothing was made
    assert team.bob.post("/api/datasets", json=body).status_code == 201
    entries = team.admin.get("/api/audit").json()["entries"]
    assert any(e["action"] == "quota.refuse" and e["user"] == "alice" for e in entries)
