"""Exact resume: from a checkpoint in-process, and after SIGKILL / SIGTERM of the job process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from model_helpers import (
    make_dataset,
    metrics,
    model_spec,
    one_thread,
    statuses,
    train_and_resume,
    write_job,
)

from trainyard.artifact.checkpoint import checkpoint_epochs, load_checkpoint
from trainyard.core.events import EventWriter, read_events
from trainyard.core.paths import checkpoint_name
from trainyard.training.loop import train

# A small custom network with dropout, so the resumed run must also restore torch's RNG.
DROPOUT_NET = (
    "from torch import nn\n"
    "def build(num_classes, in_channels, image_size):\n"
    "    return nn.Sequential(nn.Conv2d(in_channels, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),\n"
    "                         nn.Dropout(0.3), nn.LazyLinear(num_classes))\n"
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=96, val=16, size=18)


def resumable_spec(dataset, **overrides):
    fields = dict(epochs=2, crop=16, snapshot_interval=0.5, val_interval=0.5, augment={"flip": "both"},
                  lr={"policy": "step", "base_lr": 0.05, "step_percent": 40, "gamma": 0.5})
    return model_spec(dataset, **{**fields, **overrides})


def test_resume_from_a_mid_epoch_checkpoint_is_exact(dataset, tmp_path):
    spec = resumable_spec(dataset, network=None, network_source=DROPOUT_NET, solver="adam",
                          lr={"policy": "exp", "base_lr": 0.002, "gamma": 0.9})
    # from 1.5: batch 9 of 12, mid-epoch 1
    full, resumed = train_and_resume(spec, tmp_path,
                                     compared=("train_loss", "lr", "val_loss", "val_accuracy", "val_top5"))
    final_full, final_resumed = full["model"], resumed["model"]
    assert all((final_full[k] == final_resumed[k]).all() for k in final_full)


def test_resume_from_a_loaded_checkpoint_logs_where_it_resumes(dataset, tmp_path):
    # Every rank of a multi-process job gets rank 0's checkpoint already loaded (a dict, no file).
    spec = resumable_spec(dataset, epochs=1)
    first, second = tmp_path / "first", tmp_path / "second"
    with EventWriter(first) as events, one_thread():
        train(spec, first, events)
    loaded = load_checkpoint(first / "checkpoints" / checkpoint_name(0.5))
    with EventWriter(second) as events, one_thread():
        train(spec, second, events, resume=loaded)
    logs = [e["message"] for e in read_events(second / "events.jsonl", {"log"})]
    assert "resuming from the latest checkpoint at epoch 0.5" in logs
    assert list(checkpoint_epochs(second)) == [1]


def start_job(job_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "trainyard.training.run", str(job_dir)],
                            cwd=job_dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def wait_for_checkpoint(job_dir: Path, proc: subprocess.Popen, epoch: float, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["epoch"] >= epoch for e in read_events(job_dir / "events.jsonl", {"checkpoint"})):
            return
        if proc.poll() is not None:
            raise AssertionError(f"job ended early: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.01)
    raise AssertionError("no checkpoint in time")


def by_epoch(points):
    """Latest value per epoch, as describe_model folds them."""
    return dict(points)


@pytest.fixture(scope="module")
def big_dataset(tmp_path_factory):
    # Enough batches that the job is still training well after its first checkpoints.
    return make_dataset(tmp_path_factory.mktemp("big") / "stripes", train=320, val=32, size=18)


def test_killed_job_resumes_with_the_same_schedule(big_dataset, tmp_path):
    spec = resumable_spec(big_dataset, epochs=3, val_interval=1, snapshot_interval=0.5)
    reference = tmp_path / "reference"
    with EventWriter(reference) as events, one_thread():
        train(spec, reference, events)

    job = write_job(tmp_path / "job", spec)
    proc = start_job(job)
    wait_for_checkpoint(job, proc, 1.5)
    proc.kill()  # SIGKILL: no chance to clean up
    proc.wait()
    assert [s["status"] for s in statuses(job)] == ["running"]
    killed_at = max(checkpoint_epochs(job))
    assert 1.5 <= killed_at < 3

    proc = start_job(job)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    assert [s["status"] for s in statuses(job)] == ["running", "running", "done"]
    accuracy = metrics(job, "val_accuracy")
    assert sorted(by_epoch(accuracy)) == [1, 2, 3]  # one value per epoch once folded
    before = [e for e, _ in accuracy if e <= killed_at]
    assert len(before) == len(set(before))  # epochs done before the checkpoint are not repeated
    assert by_epoch(metrics(job, "lr")) == by_epoch(metrics(reference, "lr"))
    assert by_epoch(metrics(job, "train_loss")) == by_epoch(metrics(reference, "train_loss"))
    assert by_epoch(metrics(job, "val_loss")) == by_epoch(metrics(reference, "val_loss"))
    assert sorted(checkpoint_epochs(job)) == [0.5, 1, 1.5, 2, 2.5, 3]


def test_sigterm_stops_at_a_step_and_keeps_checkpoints(big_dataset, tmp_path):
    job = write_job(tmp_path / "job", resumable_spec(big_dataset, epochs=20))
    proc = start_job(job)
    wait_for_checkpoint(job, proc, 0.5)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert statuses(job)[-1]["status"] == "aborted"
    kept = checkpoint_epochs(job)
    assert kept and max(kept) < 20
    assert load_checkpoint(kept[max(kept)])["epoch"] == max(kept)
    assert not list((job / "checkpoints").glob(".*.tmp"))


def test_a_checkpoint_from_before_big_last_batches_were_kept_resumes_with_its_rule(tmp_path, monkeypatch):
    """40 images in batches of 16: the old rule dropped the last 8 (2 batches an epoch), today's
    keeps them (3). A checkpoint of the old rule, which has no entry for it, still resumes, and
    the run goes on as the old one would have."""
    import torch

    from trainyard.training import data

    stripes = make_dataset(tmp_path / "stripes", train=40, val=16, size=18)
    spec = model_spec(stripes, epochs=2, snapshot_interval=0.5, val_interval=0.5)
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    with monkeypatch.context() as old_rule:
        old_rule.setattr(data, "MAX_DROPPED_SHARE", 2.0)  # no incomplete batch is ever big enough
        with EventWriter(full) as events, one_thread():
            train(spec, full, events)
    old = load_checkpoint(full / "checkpoints" / checkpoint_name(1))
    assert old["batches_per_epoch"] == 2
    old.pop("keeps_big_last_batch", None)  # as written before the rule
    (resumed / "checkpoints").mkdir(parents=True)
    torch.save(old, resumed / "checkpoints" / checkpoint_name(1))
    with EventWriter(resumed) as events, one_thread():
        train(spec, resumed, events, resume=resumed / "checkpoints" / checkpoint_name(1))  # was "cannot resume"
    for name in ("train_loss", "val_loss", "val_accuracy"):
        assert metrics(resumed, name) == [(e, v) for e, v in metrics(full, name) if e > 1], name
    assert load_checkpoint(resumed / "checkpoints" / checkpoint_name(2))["keeps_big_last_batch"] is False
