"""Pages read a job's stored spec through its kind: a spec an older trainyard wrote still shows."""

from __future__ import annotations

import json

from tests.conftest import open_client
from tests.jobs.test_stored_specs import OLD_DATASET_SPEC, OLD_MODEL_SPEC
from trainyard.core.status import Status
from trainyard.jobs.store.store import Job


def _add(settings, client, spec: dict, kind: str) -> None:
    folder = settings.jobs_dir / spec["id"]
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(spec))
    client.app.state.ctx.store.add_job(Job(id=spec["id"], kind=kind, name=spec["name"], status=Status.DONE,
                                           needs={"pool": "cpu"}, summary={}, parent_id=spec.get("dataset_id")))


def test_the_dataset_page_and_the_clone_form_show_an_old_spec(settings):
    with open_client(settings, run_scheduler=False) as client:
        _add(settings, client, OLD_DATASET_SPEC, "dataset")
        _add(settings, client, OLD_MODEL_SPEC, "model")
        page = client.get(f"/datasets/{OLD_DATASET_SPEC['id']}")
        assert page.status_code == 200 and "28x28, 1 channel<" in page.text and "/data/digits" in page.text
        form = client.get(f"/models/new?clone={OLD_MODEL_SPEC['id']}")
        assert form.status_code == 200
        assert 'name="epochs" value="12"' in form.text and 'name="crop" value="24"' in form.text  # cloned
        assert client.get(f"/api/jobs/{OLD_MODEL_SPEC['id']}").json()["network"] == "lenet"


def test_the_classify_page_offers_the_old_models_dataset_splits(settings, tmp_path):
    """The dataset folder is read through the model's spec class; its val and test splits are
    offered for evaluation (train is not), and a model whose spec names no folder offers none."""
    dataset = tmp_path / "digits"
    for split in ("train", "val", "test"):
        (dataset / split).mkdir(parents=True)
        (dataset / split / "meta.json").write_text("{}")
    with open_client(settings, run_scheduler=False) as client:
        _add(settings, client, {**OLD_MODEL_SPEC, "dataset_dir": str(dataset)}, "model")
        _add(settings, client, {**OLD_MODEL_SPEC, "id": "m-imported", "dataset_dir": None}, "model")
        page = client.get(f"/models/{OLD_MODEL_SPEC['id']}/classify")
        assert page.status_code == 200 and '<option value="val">' in page.text
        assert '<option value="test">' in page.text and '<option value="train">' not in page.text
        imported = client.get("/models/m-imported/classify")
        assert imported.status_code == 200 and 'id="evaluate-split"' not in imported.text


def test_the_api_serves_a_models_spec_typed_as_written_and_a_broken_one_as_null(settings):
    """GET /api/models/{id}'s ``spec`` is the ModelSpec of /openapi.json: the fields its spec.json
    has, typed (a field this trainyard no longer knows dropped, none made up at today's default);
    a spec that is not a model's is null, and the job is still described."""
    with open_client(settings, run_scheduler=False) as client:
        _add(settings, client, OLD_MODEL_SPEC, "model")
        _add(settings, client, {"id": "m-bad", "kind": "model", "name": "bad", "epochs": "many"}, "model")
        spec = client.get(f"/api/models/{OLD_MODEL_SPEC['id']}").json()["spec"]
        assert (spec["epochs"], spec["crop"], spec["lr"]["step_percent"], spec["mean"]) == (12, 24, 33, "pixel")
        assert "legacy_mean_file" not in spec and "legacy_clip" not in spec["lr"]
        assert "accumulation" not in spec and "augment" not in spec  # added since: not made up
        bad = client.get("/api/models/m-bad")
        assert bad.status_code == 200 and (bad.json()["spec"], bad.json()["network"]) == (None, None)
        schema = client.get("/openapi.json").json()["components"]["schemas"]["ModelDetail"]
        assert {"$ref": "#/components/schemas/StoredModelSpec"} in schema["properties"]["spec"]["anyOf"]
