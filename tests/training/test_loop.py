"""The training loop end to end on a tiny learnable dataset: accuracy, events, seeds, failures."""

from __future__ import annotations

import re
import shutil

import pytest
from model_helpers import make_dataset, metrics, model_spec

from trainyard.core.events import EventWriter, read_events
from trainyard.core.paths import checkpoint_name
from trainyard.training.event_points import Schedule
from trainyard.training.loop import train
from trainyard.training.state import TrainingError

FAST = {"policy": "fixed", "base_lr": 0.05}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=96, val=32, size=20)


def run(spec, job_dir, **kwargs):
    with EventWriter(job_dir) as events:
        return train(spec, job_dir, events, **kwargs)


def test_learns_a_learnable_set_and_reports_everything(dataset, tmp_path):
    spec = model_spec(dataset, epochs=3, lr=FAST)
    result = run(spec, tmp_path)
    accuracy = metrics(tmp_path, "val_accuracy")
    assert [e for e, _ in accuracy] == [1, 2, 3]
    assert accuracy[-1][1] > 90 and result["val_accuracy"] == accuracy[-1][1]
    assert result["best"]["val_accuracy"] == max(v for _, v in accuracy)
    assert all(v == 100 for _, v in metrics(tmp_path, "val_top5"))  # 2 classes: top-5 is everything
    names = {e["name"] for e in read_events(tmp_path / "events.jsonl", {"metric"})}
    assert names == {"train_loss", "lr", "images_per_second", "val_loss", "val_accuracy", "val_top5"}
    # 6 batches an epoch, read back every batch here (8 read-backs an epoch at most)
    assert len(metrics(tmp_path, "train_loss")) == 18
    progress = list(read_events(tmp_path / "events.jsonl", {"progress"}))
    assert progress[-1]["done"] == progress[-1]["total"] == 18 and progress[-1]["phase"] == "train"
    checkpoints = list(read_events(tmp_path / "events.jsonl", {"checkpoint"}))
    assert [c["epoch"] for c in checkpoints] == [1, 2, 3]
    assert all((tmp_path / "checkpoints" / checkpoint_name(c["epoch"])).is_file() for c in checkpoints)
    summaries = list(read_events(tmp_path / "events.jsonl", {"summary"}))
    assert [s["epoch"] for s in summaries] == [1, 2, 3] and summaries[-1]["best"] == result["best"]
    # For people: a log line per epoch with its figures, and a final line.
    lines = (tmp_path / "log.txt").read_text().splitlines()
    epochs = [line for line in lines if "] epoch " in line]
    assert len(epochs) == 3 and "epoch 3/3: train loss " in epochs[-1]
    assert re.search(r"val loss [\d.]+, val accuracy [\d.]+ %, LR 0.05, [\d,]+ images/s, [\d.]+ s$", epochs[-1])
    assert re.search(r"finished 3 epochs in \d+s; best validation accuracy [\d.]+ % at epoch \d$", lines[-1])


def test_same_seed_same_metrics(dataset, tmp_path):
    spec = model_spec(dataset, epochs=1, augment={"flip": "lr", "noise_std": 0.02}, crop=16)
    run(spec, tmp_path / "a")
    run(spec, tmp_path / "b")
    for name in ("train_loss", "val_loss", "val_accuracy"):
        assert metrics(tmp_path / "a", name) == metrics(tmp_path / "b", name)
    run(spec.model_copy(update={"seed": 2}), tmp_path / "c")
    assert metrics(tmp_path / "a", "train_loss") != metrics(tmp_path / "c", "train_loss")


def test_diverging_learning_rate_fails_with_a_hint(dataset, tmp_path):
    spec = model_spec(dataset, epochs=2, lr={"policy": "fixed", "base_lr": 1e6})
    with pytest.raises(TrainingError, match=r"training diverged at epoch [\d.]+ \(loss is (nan|inf)\): "
                                            r"lower the learning rate \(now 1e\+06\)"):
        run(spec, tmp_path)


def test_fractional_intervals_and_accumulation(dataset, tmp_path):
    spec = model_spec(dataset, epochs=1.5, val_interval=0.5, snapshot_interval=0.75, accumulation=2,
                      batch_size=8, lr={"policy": "step", "base_lr": 0.05, "step_percent": 50})
    run(spec, tmp_path)
    assert [e for e, _ in metrics(tmp_path, "val_accuracy")] == [0.5, 1, 1.5]
    snapshots = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert snapshots == [checkpoint_name(0.75), checkpoint_name(1.5)]
    progress = list(read_events(tmp_path / "events.jsonl", {"progress"}))
    assert progress[-1]["total"] == 9  # 12 batches an epoch * 1.5 epochs / 2 per step
    lrs = [v for _, v in metrics(tmp_path, "lr")]
    assert lrs[0] == 0.05 and lrs[-1] == pytest.approx(0.005)  # step policy halfway through


def test_custom_network_source_trains(dataset, tmp_path):
    source = (
        "from torch import nn\n"
        "def build(num_classes, in_channels, image_size):\n"
        "    return nn.Sequential(nn.Conv2d(in_channels, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),\n"
        "                         nn.Flatten(), nn.Linear(8, num_classes))\n"
    )
    spec = model_spec(dataset, network=None, network_source=source, epochs=1, mean="pixel")
    result = run(spec, tmp_path)
    assert result["epoch"] == 1 and len(metrics(tmp_path, "val_accuracy")) == 1


def test_crop_larger_than_images_is_refused(dataset, tmp_path):
    with pytest.raises(TrainingError, match="crop 24 is larger than the dataset's 20x20 images"):
        run(model_spec(dataset, crop=24), tmp_path)
    with pytest.raises(TrainingError, match="network lenet needs images of at least 16x16"):
        run(model_spec(dataset, crop=12), tmp_path)


def test_schedule_points_fall_on_optimizer_steps():
    schedule = Schedule(batches_per_epoch=10, epochs=2.5, accumulation=3, val_interval=1, snapshot_interval=0.5)
    assert schedule.total_iterations == 8 and schedule.total_batches == 24
    assert schedule.validation_epochs == [1, 2, 2.5]
    assert schedule.snapshot_epochs == [0.5, 1, 1.5, 2, 2.5]
    due = [schedule.at(b) for b in range(3, 25, 3)]
    assert all(p is not None and p.batches % 3 == 0 for p in due)  # every step reads back here
    assert [p.validate for p in due if p.validate] == [1, 2, 2.5]
    assert schedule.at(24).snapshot == 2.5 and schedule.at(24).validate == 2.5


@pytest.mark.requires_cuda(1)
def test_on_cuda_with_amp_channels_last_and_exact_resume(dataset, tmp_path):
    spec = model_spec(dataset, epochs=2, lr=FAST, crop=16, snapshot_interval=0.5,
                      augment={"flip": "lr", "rotate_degrees": 5})
    result = run(spec, tmp_path / "full")
    assert result["val_accuracy"] > 90
    events = (tmp_path / "full" / "log.txt").read_text()
    assert "on cuda" in events and ("(bf16)" in events or "(fp16)" in events)
    (tmp_path / "resumed" / "checkpoints").mkdir(parents=True)
    name = checkpoint_name(1.5)
    shutil.copy(tmp_path / "full" / "checkpoints" / name, tmp_path / "resumed" / "checkpoints" / name)
    run(spec, tmp_path / "resumed", resume=tmp_path / "resumed" / "checkpoints" / name)
    after = [(e, v) for e, v in metrics(tmp_path / "full", "lr") if e > 1.5]
    assert metrics(tmp_path / "resumed", "lr") == after
