"""One list of mean modes and one way to name a GPU resource (core/vocabulary.py), used everywhere."""

from __future__ import annotations

import pytest

from trainyard.core.errors import InvalidInput, validated
from trainyard.core.vocabulary import MEAN_MODES, gpu_index, gpu_resource, gpu_share
from trainyard.jobs.scheduling.resources import GPU, Pools
from trainyard.training.spec import ModelSpec

SPEC = {"dataset_id": "d1", "dataset_dir": "/data/d1", "network": "lenet"}


def test_the_spec_takes_exactly_the_listed_mean_modes():
    assert MEAN_MODES == ("image", "pixel", "none")
    for mode in MEAN_MODES:
        assert validated(ModelSpec, {**SPEC, "mean": mode}).mean == mode
    with pytest.raises(InvalidInput, match="'image', 'pixel' or 'none'"):
        validated(ModelSpec, {**SPEC, "mean": "channel"})


def test_gpu_resource_names_round_trip_and_other_resources_hold_no_gpu():
    assert (gpu_resource(1), gpu_share(1), GPU(1, "x", 2**30).resource) == ("gpu:1", "gpushare:1", "gpu:1")
    assert [gpu_index(r) for r in ("gpu:1", "gpushare:2", "cpu:0", "dataset:3", "gpu:x")] == [1, 2, None, None, None]
    assert gpu_index("gpushare:2", shares=False) is None
    assert Pools.gpu_ids(["cpu:0", gpu_resource(3), gpu_share(0)]) == [3, 0]
