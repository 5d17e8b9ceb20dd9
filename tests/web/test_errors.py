"""Every refusal the API gives is a 4xx with ``{"detail": one line}``, whatever raised it."""

from __future__ import annotations

import pytest


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



def test_a_job_of_another_kind_is_a_404_that_says_what_it_is(client_for, settings):
    """One lookup (jobs/kinds/lookup.py): a wrong kind answers as a missing job does, wherever it is asked."""
    with client_for(settings, run_scheduler=False) as client:
        manager = client.app.state.ctx.manager
        model = manager.create("model", "a model", {"kind": "model"}, needs={"pool": "cpu"})
        dataset = manager.create("dataset", "a dataset", {"kind": "dataset"}, needs={"pool": "dataset"})
        as_dataset = [client.get(f"/api/datasets/{model.id}"),
                      client.post(f"/api/datasets/{model.id}/append", json={"train_folder": "."}),
                      client.post("/api/models", json={"name": "m", "datasets": [model.id], "networks": ["lenet"]})]
        as_model = [client.get(f"/api/models/{dataset.id}"), client.post(f"/api/models/{dataset.id}/evaluate")]
    for response in as_dataset:
        assert response.status_code == 404, response.text
        assert f"job {model.id} is a model job, not a dataset" in response.json()["detail"]
    for response in as_model:
        assert response.status_code == 404, response.text
        assert f"job {dataset.id} is a dataset job, not a model" in response.json()["detail"]


def test_the_job_builders_refuse_a_wrong_kind_with_the_same_404(ctx):
    from trainyard.jobs.kinds.dataset import append_dataset_job
    from trainyard.jobs.runs.manager import JobNotFound

    model = ctx.manager.create("model", "a model", {"kind": "model"}, needs={"pool": "cpu"})
    with pytest.raises(JobNotFound, match="not a dataset") as refused:  # was a 400 (JobError) here
        append_dataset_job(ctx, model.id, {"train_folder": "."})
    assert refused.value.http_status == 404
