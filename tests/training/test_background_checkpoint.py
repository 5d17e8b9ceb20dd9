"""Background checkpoint writes: a kill mid-write keeps the previous checkpoint, resume is exact."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from model_helpers import make_dataset, metrics, model_spec, one_thread, statuses, write_job

from trainyard.artifact.checkpoint import checkpoint_epochs, load_checkpoint
from trainyard.core.events import EventWriter, read_events
from trainyard.core.paths import checkpoint_name
from trainyard.training.checkpoint_writer import HOLD_ENV, CheckpointWriter, to_cpu_copy
from trainyard.training.loop import train


def test_cpu_copy_does_not_follow_later_changes():
    live = {"model": {"w": torch.zeros(3)}, "metrics": {"loss": [[1, 0.5]]}}
    copy = to_cpu_copy(live)
    live["model"]["w"] += 1
    live["metrics"]["loss"].append([2, 0.4])
    assert copy["model"]["w"].tolist() == [0, 0, 0]
    assert copy["metrics"]["loss"] == [[1, 0.5]]


def test_each_checkpoint_file_keeps_its_own_values_though_the_copy_memory_is_reused(tmp_path):
    """The second snapshot is copied into the first one's tensors (its write is over): each file
    still holds the values of its own epoch, and a changed shape gets new memory."""
    writer = CheckpointWriter(EventWriter(tmp_path))
    live = {"model": {"w": torch.zeros(4), "b": torch.zeros(2)}}
    writer.submit(tmp_path / "one.pt", 1, live)
    writer.wait()
    first = writer._spare[:]
    live["model"]["w"] += 1
    live["model"]["b"] = torch.ones(3)  # another shape
    writer.submit(tmp_path / "two.pt", 2, live)
    writer.wait()
    assert writer._spare[-1] is first[-1]  # "w" went into the memory of the first snapshot's "w"
    assert torch.load(tmp_path / "one.pt")["model"]["w"].tolist() == [0] * 4
    second = torch.load(tmp_path / "two.pt")["model"]
    assert second["w"].tolist() == [1] * 4 and second["b"].tolist() == [1] * 3
    assert [e["epoch"] for e in read_events(tmp_path / "events.jsonl", {"checkpoint"})] == [1, 2]


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"job ended early: {proc.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def _start(job: Path, hold: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop(HOLD_ENV, None)
    if hold is not None:
        env[HOLD_ENV] = str(hold)
    return subprocess.Popen([sys.executable, "-m", "trainyard.training.run", str(job)], cwd=job,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def test_kill_during_a_background_write_keeps_the_previous_checkpoint(tmp_path):
    dataset = make_dataset(tmp_path / "stripes", train=96, val=16, size=18)
    spec = model_spec(dataset, epochs=2, crop=16, snapshot_interval=0.5, val_interval=0.5,
                      augment={"flip": "both"}, lr={"policy": "step", "base_lr": 0.05,
                                                    "step_percent": 40, "gamma": 0.5})
    reference = tmp_path / "reference"
    with EventWriter(reference) as events, one_thread():
        train(spec, reference, events)

    job, hold = write_job(tmp_path / "job", spec), tmp_path / "hold"
    hold.mkdir()
    held = checkpoint_name(1.5)
    (hold / f"{held}.hold").touch()  # pause the epoch-1.5 write between its temp file and rename
    proc = _start(job, hold)
    _wait_for(hold / f"{held}.writing", proc)
    proc.kill()
    proc.wait()

    assert sorted(checkpoint_epochs(job)) == [0.5, 1]  # 1.5 never became a checkpoint
    assert list((job / "checkpoints").glob(f".{held}.*.tmp"))  # it was killed mid-write
    assert load_checkpoint(checkpoint_epochs(job)[1])["epoch"] == 1  # the previous one is whole
    announced = [e["epoch"] for e in read_events(job / "events.jsonl", {"checkpoint"})]
    assert 1.5 not in announced  # only complete files are announced

    proc = _start(job)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    assert statuses(job)[-1]["status"] == "done"
    assert sorted(checkpoint_epochs(job)) == [0.5, 1, 1.5, 2]
    for name in ("train_loss", "val_loss", "lr"):
        assert dict(metrics(job, name)) == dict(metrics(reference, name)), name
    final = load_checkpoint(job / "checkpoints" / checkpoint_name(2))["model"]
    expected = load_checkpoint(reference / "checkpoints" / checkpoint_name(2))["model"]
    assert all(torch.equal(final[k], expected[k]) for k in expected)
