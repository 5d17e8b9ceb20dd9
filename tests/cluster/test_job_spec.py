"""The launcher's typed view of a model spec (cluster/job_spec.py): read once from spec.json,
the same facts as the training's ModelSpec, and tolerant of a spec an older trainyard wrote."""

from __future__ import annotations

import json

import pytest

from tests.training.model_helpers import model_spec
from trainyard.cluster.job_spec import LaunchSpec, read_launch_spec
from trainyard.cluster.placement import Placement
from trainyard.core.errors import InvalidInput
from trainyard.core.stored import read_stored
from trainyard.training.spec import ModelSpec


def test_the_view_holds_what_the_training_spec_says(tmp_path):
    spec = ModelSpec(**{**model_spec(tmp_path).model_dump(), "id": "job7", "cluster": {"workers": 3, "device": "gpu"},
                        "max_restarts": 2})
    (tmp_path / "spec.json").write_text(json.dumps(spec.model_dump(mode="json")))
    view = read_launch_spec(tmp_path / "spec.json")
    assert (view.id, view.dataset_dir, view.max_restarts, view.run_id) == ("job7", spec.dataset_dir, 2, "job7")
    assert Placement.from_spec(view) == Placement(3, "gpu")


def test_an_older_spec_missing_fields_reads_with_the_defaults_the_launcher_used(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps({"dataset_dir": "/data/d1", "cluster": None,
                                                    "max_restarts": None, "removed_since": 1}))
    view = read_launch_spec(tmp_path / "spec.json")
    assert (view.id, view.max_restarts, view.run_id) == (None, 0, "job")
    assert Placement.from_spec(view) == Placement(1, "cpu")
    unset = read_stored(LaunchSpec, {"cluster": {"workers": 0, "device": ""}})
    assert Placement.from_spec(unset) == Placement(1, "cpu")


def test_a_spec_without_a_dataset_or_of_the_wrong_shape_is_refused_in_one_line(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps({"cluster": {"workers": 2}}))
    with pytest.raises(InvalidInput, match="names no dataset_dir"):
        read_launch_spec(tmp_path / "spec.json")
    (tmp_path / "spec.json").write_text(json.dumps({"dataset_dir": "/d", "max_restarts": "often"}))
    with pytest.raises(InvalidInput, match="max_restarts"):
        read_launch_spec(tmp_path / "spec.json")
