"""Multi-label datasets from CSV lists: the stored targets, the counts, and a clear error
naming the file and line for each kind of bad row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.multilabel_data import LABELS, make_multilabel_set
from trainyard.core.events import EventWriter
from trainyard.datasets.build import build_dataset
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.spec import DatasetSpec
from trainyard.datasets.storage import open_split


def spec(train: Path, val: Path | None = None, **extra) -> DatasetSpec:
    return DatasetSpec(name="shapes", task="multilabel", train_list=str(train), width=32, height=32,
                       val_list=str(val) if val else None, **extra)


def build(tmp_path: Path, the_spec: DatasetSpec) -> tuple[Path, dict]:
    job = tmp_path / "job"
    job.mkdir(exist_ok=True)
    with EventWriter(job) as events:
        info = build_dataset(the_spec, job, events, workers=1)
    return job / "dataset", info


def test_a_csv_builds_multi_hot_targets_labels_and_counts(tmp_path):
    train, truth = make_multilabel_set(tmp_path, n=24, separator="|")
    dataset, info = build(tmp_path, spec(train, val_percent=25))
    assert (dataset / "labels.txt").read_text().split() == list(LABELS)  # sorted
    assert info["task"] == "multilabel" and info["images"] == {"train": 18, "val": 6}
    targets = np.concatenate([open_split(dataset, s).labels for s in ("train", "val")])
    assert targets.shape == (24, 3) and targets.dtype == np.uint8
    per_label = {name: info["counts"]["train"][name] + info["counts"]["val"][name] for name in LABELS}
    assert per_label == {name: sum(name in t for t in truth) for name in LABELS}
    assert int(targets.sum()) == sum(len(t) for t in truth)
    stored = open_split(dataset, "train").labels.astype(np.int64)  # images holding labels i and j alike
    assert info["cooccurrence"] == (stored.T @ stored).tolist() and np.triu(stored.T @ stored, 1).sum() > 0
    assert json.loads((dataset / "train" / "meta.json").read_text())["task"] == "multilabel"


def test_val_and_test_lists_are_used_as_given(tmp_path):
    train, _ = make_multilabel_set(tmp_path, n=12, seed=1)
    val, _ = make_multilabel_set(tmp_path, n=5, seed=2, name="val.csv")
    test, _ = make_multilabel_set(tmp_path, n=4, seed=3, name="test.csv")
    _, info = build(tmp_path, spec(train, val, test_list=str(test)))
    assert info["images"] == {"train": 12, "val": 5, "test": 4}


@pytest.mark.parametrize("row, says", [
    ('images/train_000.png,red_square;;blue_circle', "line 3: an empty label"),
    (',red_square', "line 3: the row has no image path"),
    ('images/nowhere.png,red_square', "line 3: image images/nowhere.png not found"),
    ('images/train_000.png,red_square,blue_circle', "line 3: expected 2 columns"),
])
def test_a_bad_row_is_refused_naming_the_file_and_line(tmp_path, row, says):
    train, _ = make_multilabel_set(tmp_path, n=3)
    lines = train.read_text().splitlines()
    train.write_text("\n".join([*lines[:2], row, *lines[2:]]) + "\n")
    with pytest.raises(DatasetError) as err:
        build(tmp_path, spec(train))
    assert str(train) in str(err.value) and says in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "job" / "dataset").exists()


def test_a_val_label_never_in_training_is_refused(tmp_path):
    train, _ = make_multilabel_set(tmp_path, n=6)
    val = tmp_path / "val.csv"
    val.write_text('path,labels\n"images/train_001.png",red_square;purple_star\n')
    with pytest.raises(DatasetError, match=r"val.csv line 2: label 'purple_star' of the val list is never"):
        build(tmp_path, spec(train, val))


def test_the_spec_refuses_sources_of_other_tasks():
    with pytest.raises(ValueError, match="labels_file cannot be used for a multilabel dataset"):
        DatasetSpec(name="x", task="multilabel", train_list="a.csv", labels_file="labels.txt")
    with pytest.raises(ValueError, match="needs train_list"):
        DatasetSpec(name="x", task="multilabel", train_folder="images")
