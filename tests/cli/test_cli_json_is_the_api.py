"""``--json`` prints the document the API serves: the same model, dumped the same way, so a
script gets the same JSON for the same job from ``trainyard ... --json`` and from the API."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.jobs.test_stored_specs import OLD_MODEL_SPEC
from tests.web.test_stored_spec_pages import _add
from trainyard.cli.main import app


def _printed(cli_env: dict[str, str], *args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"], env=cli_env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_dataset_and_a_model_print_as_the_api_answers(settings, cli_env, make_images, client_for):
    images = make_images(settings.data_roots[0] / "pets", {"cat": 3, "dog": 3})
    dataset = _printed(cli_env, "dataset", "create", "--name", "pets", "--train-folder", str(images),
                       "--size", "32x24")
    assert dataset["status"] == "done"
    model = OLD_MODEL_SPEC["id"]  # a spec an older trainyard wrote: a field it no longer knows
    with client_for(settings, run_scheduler=False) as client:
        _add(settings, client, OLD_MODEL_SPEC, "model")
        _add(settings, client, {**OLD_MODEL_SPEC, "id": "m-two", "epochs": 3}, "model")
        for args, path in ((("dataset", "show", dataset["id"]), f"/api/datasets/{dataset['id']}"),
                           (("jobs", "show", dataset["id"]), f"/api/jobs/{dataset['id']}"),
                           (("jobs", "show", model), f"/api/jobs/{model}"),
                           (("dataset", "list"), "/api/datasets"),
                           (("jobs", "compare", model, "m-two"), f"/api/jobs/compare?ids={model},m-two")):
            printed, answered = _printed(cli_env, *args), client.get(path).json()
            assert printed == answered, args
            assert list(printed) == list(answered), args  # the fields in the same order too
    spec = _printed(cli_env, "jobs", "show", model)["spec"]
    assert spec["crop"] == 24 and "legacy_mean_file" not in spec  # typed, as the API serves it


def test_a_weights_entry_prints_as_the_api_answers(settings, cli_env, tmp_path, client_for):
    from tests.weights.fixtures import safetensors_bytes

    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes("timm:test_resnet", num_classes=3))
    assert _printed(cli_env, "weights", "import", "mine", str(path), "--network", "timm:test_resnet")["pull"] is None
    with client_for(settings, run_scheduler=False) as client:  # its start makes the first admin,
        answered = client.get("/api/weights/mine").json()     # the owner of an entry made before
        listed = _printed(cli_env, "weights", "list", "--source", "mine")["weights"]
    assert listed == [answered] and list(listed[0]) == list(answered)
    assert answered["source"] == "user" and answered["pull"] is None  # the API's field: no pull runs
