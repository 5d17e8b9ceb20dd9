"""A build the disk cannot hold is refused before it writes, with a one-line error that
proposes --encoding jpeg and its estimated size; an estimate of "none" is exact."""

from __future__ import annotations

import shutil
from collections import namedtuple

import pytest
from dataset_helpers import make_class_tree

from trainyard.core.events import EventWriter
from trainyard.datasets import disk_check
from trainyard.datasets.build import DatasetError, build_dataset
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.spec import DatasetSpec

Usage = namedtuple("Usage", "total used free")


def test_none_is_exactly_n_h_w_c():
    geometry = Geometry(256, 256, 3, "squash", "none")
    assert disk_check.estimate(1_281_167, geometry, lambda e: None, "none") == 1_281_167 * 256 * 256 * 3


def test_encoded_estimate_from_a_sample(tmp_path):
    paths = [str(p) for p in make_class_tree(tmp_path, {"a": 8}, size=(64, 48))]
    geometry = Geometry(32, 32, 3, "squash", "png")
    mean = disk_check.sample_bytes(paths, geometry, "png")
    assert 0 < mean < 32 * 32 * 3 * 2
    assert disk_check.estimate(1000, geometry, lambda e: mean, "png") == int(1000 * mean * disk_check.MARGIN)


def test_spread_covers_the_whole_range():
    assert disk_check.spread(1000, 4).tolist() == [0, 333, 666, 999]
    assert disk_check.spread(3, 16).tolist() == [0, 1, 2]


@pytest.mark.parametrize("encoding", ["none", "png"])
def test_a_build_too_big_for_the_disk_is_refused_before_writing(tmp_path, monkeypatch, encoding):
    make_class_tree(tmp_path / "images", {"a": 4, "b": 4})
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10**9, 10**9 - 1000, 1000))
    spec = DatasetSpec(name="big", train_folder=str(tmp_path / "images"), width=64, height=64, encoding=encoding)
    with EventWriter(tmp_path / "job") as events, pytest.raises(DatasetError) as refused:
        build_dataset(spec, tmp_path / "job", events, workers=1)
    message = str(refused.value)
    assert "\n" not in message and f"--encoding {encoding}" in message and "use --encoding jpeg (about" in message
    assert "has 1000 bytes free" in message and "KiB)" in message  # sizes in words, each in its unit
    assert not (tmp_path / "job" / "dataset.tmp").exists() and not (tmp_path / "job" / "dataset").exists()


def test_jpeg_too_big_says_to_free_space(tmp_path, monkeypatch):
    make_class_tree(tmp_path / "images", {"a": 4, "b": 4})
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10**9, 10**9, 0))
    spec = DatasetSpec(name="big", train_folder=str(tmp_path / "images"), width=64, height=64, encoding="jpeg")
    with EventWriter(tmp_path / "job") as events, pytest.raises(DatasetError, match="free some space"):
        build_dataset(spec, tmp_path / "job", events, workers=1)
