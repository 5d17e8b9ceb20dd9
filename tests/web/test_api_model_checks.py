"""POST /api/models refuses, with 422 and the line or layer, a network that cannot train on the
dataset, before anything is queued (the check Visualize uses: build, one forward pass)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app

SYNTAX_ERROR = "from torch import nn\n\ndef build(num_classes, in_channels, image_size)\n    return nn.Linear(1, 1)\n"
SHAPE_MISMATCH = """from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, in_channels):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(in_channels, 16, 3, padding=1), nn.ReLU())
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(123, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def build(num_classes, in_channels, image_size):
    return Net(num_classes, in_channels)
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A client (no scheduler) and a 30x30 RGB dataset of 3 classes, as its job reported it."""
    from trainyard.settings import Settings

    tmp = tmp_path_factory.mktemp("checks")
    app = create_app(Settings(home=tmp / "home", data_roots=[tmp / "data"]),
                     pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    ctx = app.state.ctx
    dataset = ctx.manager.create("dataset", "small", {"name": "small"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["a", "b", "c"], "width": 30,
                                                            "height": 30, "channels": 3})
    with TestClient(app) as client:
        yield client, dataset.id


def create(api, **fields):
    client, dataset_id = api
    return client.post("/api/models", json={"name": "m", "datasets": [dataset_id], **fields})


def models(api) -> int:
    return len(api[0].get("/api/models").json()["models"])


def test_a_syntax_error_is_refused_with_its_line(api):
    response = create(api, network_source=SYNTAX_ERROR)
    assert response.status_code == 422
    assert "line 3: SyntaxError" in response.json()["detail"]
    assert models(api) == 0


def test_a_network_too_big_for_the_images_is_refused(api):
    response = create(api, networks=["alexnet"])
    assert response.status_code == 422
    assert response.json()["detail"] == ("network alexnet needs images of at least 63x63; this dataset gives "
                                         "30x30: choose a larger dataset or another network")
    assert models(api) == 0


def test_a_shape_mismatch_names_the_layer(api):
    response = create(api, network_source=SHAPE_MISMATCH)
    assert response.status_code == 422
    assert "layer 'classifier.1' (Linear) expects 123 inputs, gets 14400" in response.json()["detail"]
    assert "3x30x30" in response.json()["detail"]
    assert models(api) == 0


def test_a_network_that_runs_is_queued(api):
    response = create(api, networks=["lenet"], base_lrs=[0.01, 0.02])
    assert response.status_code == 201, response.text
    assert models(api) == 2


def test_a_sweep_checks_its_network_once(api, monkeypatch):
    """Learning rates and batch sizes do not change what the network is: 4 jobs, 1 check."""
    from trainyard.networks import cache as network_cache

    checked = []
    monkeypatch.setattr(network_cache, "check_network_isolated",
                        lambda source, *args, **kwargs: checked.append(source) or {"ok": True})
    source = SHAPE_MISMATCH.replace("nn.Linear(123,", "nn.Linear(16 * 30 * 30,")
    before = models(api)
    response = create(api, network_source=source, base_lrs=[0.01, 0.02], batch_sizes=[4, 8])
    assert response.status_code == 201, response.text
    assert len(response.json()["jobs"]) == 4 and models(api) == before + 4
    assert checked == [source]


def test_checking_a_request_refuses_what_create_refuses_and_creates_nothing(api):
    client, dataset_id = api
    before = models(api)
    refused = client.post("/api/models/check", json={"name": "m", "datasets": [dataset_id],
                                                     "network_source": SYNTAX_ERROR})
    assert refused.status_code == 422 and "line 3: SyntaxError" in refused.json()["detail"]
    accepted = client.post("/api/models/check", json={"name": "m", "datasets": [dataset_id], "networks": ["lenet"],
                                                      "base_lrs": [0.01, 0.02]})
    assert accepted.status_code == 200 and accepted.json() == {"ok": True}
    assert models(api) == before
