"""Searching timm's networks and one network's details, computed on demand."""

from __future__ import annotations

import pytest


@pytest.fixture
def api(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        yield client


def test_search_and_details(api):
    found = api.get("/api/networks/search", params={"q": "convnext nano"}).json()["networks"]
    assert "timm:convnext_nano" in found
    details = api.get("/api/networks/timm:test_resnet").json()
    assert details["name"] == "timm:test_resnet" and details["params"] > 100_000
    assert api.get("/api/networks/resnet18").json()["params"] == 11_181_642  # 10 classes
    missing = api.get("/api/networks/timm:nonesuch")
    assert missing.status_code == 404 and "timm" in missing.json()["detail"]
    assert "def build" in api.get("/api/networks/lenet/source").text  # the older routes still answer


def test_search_with_a_detector_head_gives_that_detector_on_each_backbone(api):
    found = api.get("/api/networks/search", params={"q": "test_resnet", "head": "fcos"}).json()
    assert "fcos:timm:test_resnet" in found["networks"] and all(n.startswith("fcos:timm:") for n in found["networks"])
    details = api.get("/api/networks/fcos:timm:test_resnet").json()
    assert details["task"] == "detection" and details["params"] > 100_000
    wrong = api.get("/api/networks/search", params={"q": "resnet", "head": "yolo"})
    assert wrong.status_code == 422 and "fasterrcnn" in wrong.text
