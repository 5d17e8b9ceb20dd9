"""ModelSpec: defaults, the network XOR network_source rule, clear messages, spec.json loading."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from trainyard.training.spec import ModelSpec, SpecError, load_spec

BASE = {"dataset_id": "d1", "dataset_dir": "/data/d1"}


def test_defaults_follow_digits():
    spec = ModelSpec(**BASE, network="lenet")
    assert spec.kind == "model" and spec.version == 1
    assert spec.epochs == 30 and spec.solver == "sgd" and spec.momentum == 0.9
    assert spec.lr.policy == "step" and spec.lr.base_lr == 0.01
    assert spec.mean == "image" and spec.precision == "auto" and spec.processes == 1
    assert spec.default_batch_size() == 64  # LeNet's default


def test_custom_network_default_batch_size():
    spec = ModelSpec(**BASE, network_source="def build(n, c, s): ...")
    assert spec.default_batch_size() == 32
    assert ModelSpec(**BASE, network="lenet", batch_size=7).default_batch_size() == 7


@pytest.mark.parametrize("fields", [{}, {"network": "lenet", "network_source": "x = 1"}])
def test_exactly_one_network(fields):
    with pytest.raises(ValidationError, match="exactly one of network"):
        ModelSpec(**BASE, **fields)


@pytest.mark.parametrize("field, value, message", [
    ("network", "lenet5", "unknown network 'lenet5'; did you mean 'lenet'[?] valid names: lenet, "),
    ("solver", "sgdd", "unknown solver 'sgdd'"),
    ("epochs", 0, "greater than 0"),
    ("mean", "median", "'image', 'pixel' or 'none'"),
    ("precision", "fp8", "'auto', 'fp32', 'bf16' or 'fp16'"),
    ("version", 2, "spec version 2 is not supported"),
    ("unknown_field", 1, "Extra inputs are not permitted"),
])
def test_bad_values_are_refused_with_a_clear_message(field, value, message):
    fields = {**BASE, "network": "lenet", field: value}
    with pytest.raises(ValidationError, match=message):
        ModelSpec(**fields)


def test_freeze_backbone_needs_pretrained():
    with pytest.raises(ValidationError, match="freeze_backbone needs pretrained"):
        ModelSpec(**BASE, network="lenet", freeze_backbone=True)
    assert ModelSpec(**BASE, network="lenet", freeze_backbone=True, pretrained="/w.pt").freeze_backbone


def test_solver_name_is_case_insensitive():
    assert ModelSpec(**BASE, network="lenet", solver="SGD").solver == "sgd"


def test_round_trip_through_spec_json(tmp_path):
    spec = ModelSpec(**BASE, network="lenet", epochs=2.5, lr={"policy": "multistep", "steps_percent": [60, 20]},
                     augment={"flip": "lr"}, id="m1")
    path = tmp_path / "spec.json"
    path.write_text(spec.model_dump_json())
    loaded = load_spec(path)
    assert loaded == spec
    assert loaded.lr.steps_percent == [20, 60] and loaded.augment.flip == "lr"


def test_load_spec_lists_every_problem(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({**BASE, "network": "lenet", "epochs": -1, "batch_size": 0}))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "epochs: Input should be greater than 0" in str(info.value)
    assert "batch_size: Input should be greater than or equal to 1" in str(info.value)
