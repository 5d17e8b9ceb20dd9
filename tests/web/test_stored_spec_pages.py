"""Pages read a job's stored spec through its kind: a spec an older trainyard wrote still shows."""

from __future__ import annotations

import json

from tests.conftest import open_client
from tests.jobs.test_stored_specs import OLD_DATASET_SPEC, OLD_MODEL_SPEC
from trainyard.core.status import Status
from trainyard.jobs.store import Job


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
