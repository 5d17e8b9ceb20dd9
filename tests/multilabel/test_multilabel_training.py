"""A multi-label run in trainyard's own loop: its checkpoints save the thresholds tuned on the
validation split, a resumed run takes them back and continues exactly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from tests.multilabel_data import make_multilabel_set
from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.core.events import EventWriter, read_events
from trainyard.core.paths import checkpoint_name
from trainyard.datasets.build import build_dataset
from trainyard.datasets.spec import DatasetSpec
from trainyard.training.build_run import prepare
from trainyard.training.loop import train
from trainyard.training.spec import ModelSpec


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ml-train")
    train_list, _ = make_multilabel_set(tmp, n=48, seed=4)
    with EventWriter(tmp / "job") as events:
        build_dataset(DatasetSpec(name="shapes", task="multilabel", train_list=str(train_list), width=16,
                                  height=16, val_percent=25), tmp / "job", events, workers=1)
    return tmp / "job" / "dataset"


def spec(dataset: Path) -> ModelSpec:
    return ModelSpec(dataset_id="ds1", dataset_dir=str(dataset), task="multilabel", network="lenet", epochs=2,
                     batch_size=8, seed=1, solver="adam", snapshot_interval=0.5, val_interval=0.5,
                     lr={"policy": "fixed", "base_lr": 0.005})


def metric(job: Path, name: str) -> list[tuple[float, float]]:
    return [(e["epoch"], e["value"]) for e in read_events(job / "events.jsonl", {"metric"}) if e["name"] == name]


def test_checkpoints_keep_thresholds_and_a_resume_continues_exactly(dataset, tmp_path):
    torch.set_num_threads(1)
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    with EventWriter(full) as events:
        result = train(spec(dataset), full, events)
    assert set(result["best"]) == {"epoch", "val_micro_f1"}
    middle = load_checkpoint(full / "checkpoints" / checkpoint_name(1.5))
    assert len(middle["thresholds"]) == 3  # one a label, and the resume below starts from them
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copy(full / "checkpoints" / checkpoint_name(1.5), resumed / "checkpoints")
    with EventWriter(tmp_path / "probe") as events:  # what the resumed run starts from
        assert prepare(spec(dataset), tmp_path / "probe", events, resume=middle).task_state["thresholds"] \
            == middle["thresholds"]
    with EventWriter(resumed) as events:
        train(spec(dataset), resumed, events, resume=resumed / "checkpoints" / checkpoint_name(1.5))
    for name in ("val_loss", "val_micro_f1", "val_map"):  # the same weights validate alike
        assert metric(resumed, name) == [p for p in metric(full, name) if p[0] > 1.5], name
    last = checkpoint_name(2)
    assert (load_checkpoint(full / "checkpoints" / last)["thresholds"]
            == load_checkpoint(resumed / "checkpoints" / last)["thresholds"])
