"""Each job kind reads its stored spec.json typed, and a spec an older trainyard wrote still loads.

The old specs below are literal: fields this version added are missing (``accumulation``,
``max_restarts``, ``augment``), and fields it no longer knows are there (``legacy_mean_file``).
"""

from __future__ import annotations

import json

import pytest

from trainyard.core.errors import InvalidInput
from trainyard.core.paths import JobFolder
from trainyard.datasets.spec import DatasetSpec
from trainyard.inference.spec import InferenceSpec
from trainyard.jobs.kinds.registry import CLASSIFY_MANY, DATASET, EVALUATE, MODEL, get_kind
from trainyard.training.spec import ModelSpec, SpecError, load_spec

OLD_MODEL_SPEC = {
    "version": 1, "kind": "model", "id": "m-old", "name": "lenet on digits",
    "dataset_id": "d-old", "dataset_dir": "/srv/trainyard/jobs/d-old/dataset",
    "network": "lenet", "epochs": 12, "batch_size": 64, "solver": "sgd",
    "lr": {"policy": "step", "base_lr": 0.01, "step_percent": 33, "gamma": 0.1, "legacy_clip": 5},
    "momentum": 0.9, "weight_decay": 0.0005, "mean": "pixel", "crop": 24,
    "legacy_mean_file": "/srv/old/mean.binaryproto", "use_gpu_decode": True,
}
# What jobs/kinds/imported.py writes for a model trained elsewhere: no dataset at all.
IMPORTED_MODEL_SPEC = {
    "version": 1, "kind": "model", "id": "m-imp", "name": "from afar", "network": "resnet18",
    "network_source": None, "epochs": 3, "imported": {"archive": "a.tar.gz", "job": {"id": "j1"}},
}
OLD_DATASET_SPEC = {"version": 1, "kind": "dataset", "id": "d-old", "name": "digits", "train_folder": "/data/digits",
                    "width": 28, "height": 28, "channels": 1, "resize": "squash", "val_percent": 25,
                    "encoding": "png", "legacy_backend": "lmdb"}
OLD_EVALUATE_SPEC = {"version": 1, "kind": "evaluate", "id": "e-old", "name": "evaluate val", "model_id": "m-old",
                     "checkpoint": "/srv/m-old/checkpoints/epoch-12.pt", "epoch": 12, "dataset_dir": "/srv/d",
                     "dataset_id": "d-old", "split": "val", "legacy_gpu": 0}


def folder_with(tmp_path, spec: dict) -> JobFolder:
    folder = JobFolder(tmp_path / str(spec.get("id", "job")))
    folder.path.mkdir(parents=True)
    folder.spec.write_text(json.dumps(spec))
    return folder


def test_each_kind_carries_its_spec_class():
    assert (DATASET.spec, MODEL.spec, CLASSIFY_MANY.spec, EVALUATE.spec) == (
        DatasetSpec, ModelSpec, InferenceSpec, InferenceSpec)
    assert get_kind("model") is MODEL


def test_an_old_model_spec_loads_typed_with_new_fields_at_their_defaults(tmp_path):
    spec = MODEL.spec_of(folder_with(tmp_path, OLD_MODEL_SPEC))
    assert isinstance(spec, ModelSpec)
    assert (spec.network, spec.epochs, spec.mean, spec.crop, spec.lr.policy, spec.lr.step_percent) == (
        "lenet", 12, "pixel", 24, "step", 33)
    assert spec.accumulation == 1 and spec.max_restarts == 0 and spec.augment.flip == "none"
    assert not hasattr(spec, "legacy_mean_file") and "legacy_clip" not in spec.lr.model_dump()


def test_the_same_old_spec_is_still_refused_where_a_job_is_made_or_trained(tmp_path):
    """Tolerance is for reading back only: a new spec with an unknown field is a typo."""
    folder = folder_with(tmp_path, OLD_MODEL_SPEC)
    with pytest.raises(SpecError, match="legacy_mean_file"):
        load_spec(folder.spec)


def test_an_imported_models_spec_loads_without_a_dataset(tmp_path):
    spec = MODEL.spec_of(folder_with(tmp_path, IMPORTED_MODEL_SPEC))
    assert (spec.network, spec.dataset_dir, spec.dataset_id, spec.epochs) == ("resnet18", None, None, 3)
    with pytest.raises(SpecError, match="imported"):
        load_spec(folder_with(tmp_path / "train", IMPORTED_MODEL_SPEC).spec)  # never trained here
    no_dataset = {k: v for k, v in IMPORTED_MODEL_SPEC.items() if k != "imported"}
    with pytest.raises(SpecError, match="dataset_id and dataset_dir"):  # a new spec needs its dataset
        load_spec(folder_with(tmp_path / "new", no_dataset).spec)


def test_old_dataset_and_inference_specs_load(tmp_path):
    dataset = DATASET.spec_of(folder_with(tmp_path, OLD_DATASET_SPEC))
    assert (dataset.width, dataset.channels, dataset.encoding, dataset.test_percent) == (28, 1, "png", 0)
    evaluation = EVALUATE.spec_of(folder_with(tmp_path, OLD_EVALUATE_SPEC))
    assert (evaluation.model_id, evaluation.split, evaluation.epoch, evaluation.top) == ("m-old", "val", 12, 5)


def test_a_spec_of_another_kind_is_a_clear_error_and_find_spec_is_none(tmp_path):
    folder = folder_with(tmp_path, OLD_DATASET_SPEC)
    with pytest.raises(InvalidInput, match="kind"):
        MODEL.spec_of(folder)
    assert MODEL.find_spec(folder) is None
    assert MODEL.find_spec(JobFolder(tmp_path / "no-such-job")) is None


def test_a_model_job_of_an_old_spec_is_described_and_started_as_before(tmp_path):
    folder = folder_with(tmp_path, {**OLD_MODEL_SPEC, "processes": 2})
    command = MODEL.command(folder, [])
    assert "torch.distributed.run" in command and "--nproc-per-node=2" in command


def test_a_stored_multi_node_spec_keeps_its_rendezvous(tmp_path):
    folder = folder_with(tmp_path, {**OLD_MODEL_SPEC, "nnodes": 2, "node_rank": 1, "master": "10.0.0.1:29500"})
    assert MODEL.spec_of(folder).master == "10.0.0.1:29500"
    command = MODEL.command(folder, [])
    assert "--master-addr=10.0.0.1" in command and "--master-port=29500" in command and "--node-rank=1" in command


def test_a_broken_model_spec_still_describes_the_job(tmp_path):
    """The job is described whatever its spec.json holds: its document's spec is typed, a broken
    one null (as the API serves it, tests/web/test_stored_spec_pages.py), and its page and `jobs
    show` list the settings as written (``spec_as_written``)."""
    from types import SimpleNamespace

    from trainyard.jobs.kinds.documents import JobDetail
    from trainyard.jobs.kinds.registry import describe_model, spec_as_written

    def common(job_id: str) -> JobDetail:
        return JobDetail(id=job_id, kind="model", name=job_id, status="done", status_detail=None, error=None,
                         progress=1, eta=None, elapsed=None, created_at=0, started_at=None, finished_at=None,
                         updated_at=None, parent=None, group=None, needs=None, summary={}, resources=[], history=[])

    folder = folder_with(tmp_path, {"id": "m-bad", "kind": "model", "epochs": "many"})
    doc = describe_model(SimpleNamespace(parent_id=None, summary={}), folder, common("m-bad"))
    assert (doc.network, doc.epochs, doc.spec, spec_as_written(folder)["epochs"]) == (None, None, None, "many")
    old = folder_with(tmp_path, OLD_MODEL_SPEC)
    good = describe_model(SimpleNamespace(parent_id="d-old", summary={}), old, common("m-old"))
    assert (good.network, good.epochs, good.spec.crop, spec_as_written(old)) == ("lenet", 12, 24, OLD_MODEL_SPEC)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_appending_to_a_dataset_whose_stored_spec_is_old(ctx, image_folder):
    """The parent's spec is read back tolerant; the new version's spec is checked as ever."""
    from trainyard.core.status import Status
    from trainyard.jobs.kinds.dataset import append_dataset_job
    from trainyard.jobs.store.store import Job

    ctx.manager.folder("d-old").path.mkdir(parents=True)
    ctx.manager.folder("d-old").spec.write_text(json.dumps(OLD_DATASET_SPEC))
    ctx.store.add_job(Job(id="d-old", kind="dataset", name="digits", status=Status.DONE, needs={}, summary={}))
    job = append_dataset_job(ctx, "d-old", {"train_folder": str(image_folder)})
    spec = DATASET.spec_of(ctx.manager.folder(job.id))
    assert (spec.name, spec.dataset_version, spec.width, spec.channels, spec.encoding) == (
        "digits v2", 2, 28, 1, "png")
    with pytest.raises(ValueError, match="legacy_backend"):  # the API makes it a 422
        append_dataset_job(ctx, "d-old", {"train_folder": str(image_folder), "legacy_backend": "lmdb"})
