"""/api/weights and the weights page: list, pull with progress, import, remove."""

from __future__ import annotations

import pytest

from tests.weights.file_server import Served
from tests.weights.fixtures import HUB_PATH, TIMM_ENTRY, safetensors_bytes


@pytest.fixture
def api(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        yield client


def test_list_searches_both_libraries(api):
    doc = api.get("/api/weights", params={"search": "resnet18"}).json()
    names = {row["name"] for row in doc["weights"]}
    assert "resnet18.imagenet1k_v1" in names and "timm:resnet18.a1_in1k" in names
    assert all(not row["present"] for row in doc["weights"])
    assert api.get("/api/weights", params={"source": "nope"}).status_code == 422


def test_pull_shows_progress_then_the_entry_is_present(api, file_server, wait_job, hub_file):
    from tests.conftest import wait_for

    file_server.files[HUB_PATH] = hub_file
    started = api.post(f"/api/weights/{TIMM_ENTRY}/pull")
    assert started.status_code == 202 and started.json()["pull"]["state"] in ("running", "done")
    row = wait_for(lambda: (r := api.get(f"/api/weights/{TIMM_ENTRY}").json())["pull"]["state"] != "running" and r)
    assert row["present"] and row["pull"]["done"] == row["pull"]["total"] == len(hub_file.body)
    assert api.delete(f"/api/weights/{TIMM_ENTRY}").json()["present"] is False


def test_a_failed_pull_reports_why(api, file_server, hub_file):
    from tests.conftest import wait_for

    file_server.files[HUB_PATH] = Served(hub_file.body[:-10] + b"0123456789", hub_file.etag)
    api.post(f"/api/weights/{TIMM_ENTRY}/pull")
    row = wait_for(lambda: (r := api.get(f"/api/weights/{TIMM_ENTRY}").json())["pull"]["state"] != "running" and r)
    assert row["pull"]["state"] == "failed" and "SHA-256" in row["pull"]["error"] and not row["present"]


def test_import_upload_and_its_errors(api):
    body = safetensors_bytes("timm:test_resnet", num_classes=4)
    made = api.post("/api/weights", data={"name": "mine", "network": "timm:test_resnet"},
                    files={"file": ("w.safetensors", body)})
    assert made.status_code == 201 and made.json()["present"] and made.json()["num_classes"] == 4
    wrong = api.post("/api/weights", data={"name": "other", "network": "lenet"},
                     files={"file": ("w.safetensors", body)})
    assert wrong.status_code == 422 and "does not fit network lenet" in wrong.json()["detail"]
    odd_name = api.post("/api/weights", data={"name": "dots", "network": "lenet"}, files={"file": ("..", b"junk")})
    assert odd_name.status_code == 422 and "not a weights file" in odd_name.json()["detail"]  # was a 500
    empty = api.post("/api/weights", data={"name": "empty", "network": "lenet"}, files={"file": ("w.pt", b"")})
    assert empty.status_code == 400 and "is empty" in empty.json()["detail"]
    assert api.get("/api/weights/nothing-here").status_code == 404
    assert api.delete("/api/weights/resnet18.imagenet").status_code == 404


def test_weights_page(api):
    page = api.get("/weights")
    assert page.status_code == 200 and "weights.js" in page.text and "Import a file" in page.text


def test_own_entries_come_first_and_pages_come_from_the_server(api, tmp_path):
    """Issue 22: an own entry was line 1,774 of 1,775 and not on the page; its input size said
    224x224 for a 32x32 network; vgg16's features-only weights showed "nan%"."""
    import io

    import torch

    from trainyard.networks import create_network

    buffer = io.BytesIO()  # a trainyard checkpoint of a LeNet trained on 32x32 grey images
    torch.save({"model": create_network("lenet", 2, 1, 32).state_dict(),
                "preprocess": {"width": 32, "height": 32, "channels": 1, "crop": None, "mean": None, "std": None}},
               buffer)
    made = api.post("/api/weights", data={"name": "zz-digits", "network": "lenet"},
                    files={"file": ("digits.pt", buffer.getvalue())})
    assert made.status_code == 201, made.text
    first = api.get("/api/weights", params={"limit": 5}).json()
    assert first["weights"][0]["name"] == "zz-digits" and first["weights"][0]["input_size"] == [1, 32, 32]
    assert first["total"] > 1000 and len(first["weights"]) == 5
    second = api.get("/api/weights", params={"limit": 5, "offset": 5}).json()
    assert second["offset"] == 5 and {r["name"] for r in second["weights"]}.isdisjoint(
        r["name"] for r in first["weights"])
    mine = api.get("/api/weights", params={"source": "mine"}).json()
    assert [r["name"] for r in mine["weights"]] == ["zz-digits"]
    both_words = api.get("/api/weights", params={"search": "vgg16 features", "limit": 0}).json()["weights"]
    assert [r["name"] for r in both_words] == ["vgg16.imagenet1k_features"]
    assert both_words[0]["accuracy"] == {}  # torchvision publishes NaN for it: no figure, not "nan%"
    assert api.get("/api/weights", params={"offset": -1}).status_code == 422
