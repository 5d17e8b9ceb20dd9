"""The job a checkpoint was trained in (artifact/checkpoint.JobOrigin), as an export names it:
read typed from the embedded spec, and nothing, not an error, from an older or odd checkpoint."""

from __future__ import annotations

import pytest

from trainyard.artifact.checkpoint import JobOrigin


def test_the_embedded_spec_names_the_job_and_its_dataset():
    spec = {"version": 1, "kind": "model", "id": "m1", "name": "lenet run", "dataset_id": "d1",
            "dataset_dir": "/home/jobs/d1/dataset", "network": "lenet", "lr": {"policy": "step"}}
    origin = JobOrigin.of_checkpoint({"epoch": 3.0, "spec": spec})
    assert origin == JobOrigin(id="m1", name="lenet run", dataset_id="d1", dataset_dir="/home/jobs/d1/dataset")


@pytest.mark.parametrize("checkpoint", [{}, {"spec": None}, {"spec": "m1"}, {"spec": {"id": ["m1"]}}])
def test_a_checkpoint_without_a_usable_spec_names_no_job(checkpoint):
    assert JobOrigin.of_checkpoint(checkpoint) == JobOrigin()


def test_an_imported_models_spec_has_no_dataset_folder():
    origin = JobOrigin.of_checkpoint({"spec": {"id": "m2", "name": "imported", "dataset_dir": None}})
    assert (origin.id, origin.dataset_id, origin.dataset_dir) == ("m2", None, None)
