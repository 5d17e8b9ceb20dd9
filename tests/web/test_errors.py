"""Every refusal the API gives is a 4xx with ``{"detail": one line}``, whatever raised it."""

from __future__ import annotations


def test_a_request_that_fails_validation_gets_one_line_naming_the_field(client_for, settings):
    with client_for(settings, run_scheduler=False) as client:
        response = client.get("/api/jobs/nope/log", params={"max_bytes": 10**9})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail
    assert "max_bytes" in detail


def test_each_kind_of_user_error_keeps_its_own_status(client_for, settings):
    with client_for(settings, run_scheduler=False) as client:
        missing = client.post("/api/jobs/nope/abort")  # NotFound
        unknown = client.get("/api/networks/no-such-net/source")  # UnknownNetwork, a NotFound
        no_dataset = client.post("/api/models", json={"name": "m", "datasets": ["nope"],
                                                            "networks": ["lenet"]})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    assert unknown.status_code == 404 and "no-such-net" in unknown.json()["detail"]
    assert no_dataset.status_code == 404 and "no dataset with id 'nope'" in no_dataset.json()["detail"]
