"""Helpers for the training tests: tiny learnable datasets written in the storage format, specs."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import torch

from trainyard.core.events import read_events
from trainyard.core.paths import JobFolder
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import save_mean
from trainyard.training.spec import ModelSpec

CLASSES = ["horizontal", "vertical"]

# A custom network that flattens with x.view after a convolution (fails on a channels_last
# activation) and holds a 5-D Conv3d weight (has no channels_last form): test_custom_layout.py.
VIEW_NET = (
    "import torch\n"
    "from torch import nn\n"
    "class Net(nn.Module):\n"
    "    def __init__(self, num_classes, in_channels, image_size):\n"
    "        super().__init__()\n"
    "        self.conv = nn.Conv2d(in_channels, 4, 3, padding=1)\n"
    "        self.extra = nn.Conv3d(1, 1, 1)  # a 5-D weight: no channels_last form exists\n"
    "        self.fc = nn.Linear(4 * image_size * image_size, num_classes)\n"
    "    def forward(self, x):\n"
    "        x = torch.relu(self.conv(x))\n"
    "        return self.fc(x.view(x.shape[0], -1))\n"
    "def build(num_classes, in_channels, image_size):\n"
    "    return Net(num_classes, in_channels, image_size)\n"
)


def stripes(label: int, size: int, channels: int, rng: np.random.Generator) -> np.ndarray:
    """A (size, size, channels) uint8 image of horizontal (0) or vertical (1) stripes, noisy."""
    period = int(rng.integers(3, 6))
    phase = int(rng.integers(0, period))
    wave = ((np.arange(size) + phase) % period < period / 2).astype(np.float32)
    plane = np.repeat(wave[:, None], size, axis=1) if label == 0 else np.repeat(wave[None, :], size, axis=0)
    contrast = rng.uniform(120, 200)
    base = rng.uniform(20, 50)
    pixels = base + contrast * plane + rng.normal(0, 10, (size, size))
    pixels = np.repeat(pixels[:, :, None], channels, axis=2)
    if channels == 3:
        pixels = pixels * rng.uniform(0.7, 1.0, size=3)  # a random tint per image
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_dataset(folder: Path, *, train: int = 96, val: int = 32, size: int = 16, channels: int = 1,
                 classes: list[str] | None = None, seed: int = 0, encoding: str = "none") -> Path:
    """A built dataset folder (info.json, labels.txt, mean.npy, train/, val/) of stripe images.

    With more than two classes, class k > 1 is a flat image of brightness 40 * k.
    """
    classes = classes or CLASSES
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, n in (("train", train), ("val", val)):
        writer = SplitWriter(folder / split, size, size, channels, encoding, mean=split == "train")
        labels = np.arange(n) % len(classes)
        for label in rng.permutation(labels):
            writer.append(_image(int(label), size, channels, rng), int(label))
        writer.close()
        if split == "train":
            save_mean(folder, writer.mean())
        counts[split] = {name: int((labels == i).sum()) for i, name in enumerate(classes)}
    info = {"version": 1, "name": "stripes", "classes": classes, "counts": counts,
            "images": {"train": train, "val": val}, "skipped": [], "width": size, "height": size,
            "channels": channels, "resize": "squash", "encoding": encoding}
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "labels.txt").write_text("".join(f"{c}\n" for c in classes))
    return folder


def _image(label: int, size: int, channels: int, rng: np.random.Generator) -> np.ndarray:
    if label < 2:
        return stripes(label, size, channels, rng)
    return np.full((size, size, channels), 40 * label, np.uint8)


def model_spec(dataset: Path, **overrides) -> ModelSpec:
    """A quick spec: LeNet, 2 epochs, batch 16, fixed LR, seed 1 (then ``overrides``)."""
    fields = dict(dataset_id="ds1", dataset_dir=str(dataset), network="lenet", epochs=2,
                  batch_size=16, seed=1, lr={"policy": "fixed", "base_lr": 0.01})
    fields.update(overrides)
    return ModelSpec(**fields)


def write_job(job_dir: Path, spec: ModelSpec) -> Path:
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "spec.json").write_text(spec.model_dump_json(indent=2))
    return job_dir


def metrics(job_dir: Path, name: str) -> list[tuple[float, float]]:
    """[(epoch, value), ...] of one metric, in the order they were written."""
    return [(e["epoch"], e["value"]) for e in read_events(JobFolder(job_dir).events, {"metric"})
            if e["name"] == name]


def statuses(job_dir: Path) -> list[dict]:
    return list(read_events(JobFolder(job_dir).events, {"status"}))


@contextlib.contextmanager
def one_thread():
    """Run torch on one CPU thread (as job subprocesses started with OMP_NUM_THREADS=1 do).

    Same thread count, same float sums: results compare exactly. It also keeps these tests
    quick on a busy machine, where several spinning OpenMP threads per process slow everything.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_and_resume(spec: ModelSpec, tmp_path: Path, at: float = 1.5,
                     compared=("train_loss", "val_loss", "val_accuracy")) -> tuple[dict, dict]:
    """Train ``spec`` through, then again from its checkpoint at epoch ``at`` in another folder;
    assert every ``compared`` metric after ``at`` is equal. The two final checkpoints (full, resumed)."""
    import shutil

    from trainyard.artifact.checkpoint import load_checkpoint
    from trainyard.core.events import EventWriter
    from trainyard.core.paths import checkpoint_name
    from trainyard.training.loop import train

    full, resumed = tmp_path / "full", tmp_path / "resumed"
    with EventWriter(full) as events, one_thread():
        train(spec, full, events)
    point = full / "checkpoints" / checkpoint_name(at)
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copy(point, resumed / "checkpoints" / point.name)
    with EventWriter(resumed) as events, one_thread():
        train(spec, resumed, events, resume=resumed / "checkpoints" / point.name)
    for name in compared:
        after = [(e, v) for e, v in metrics(full, name) if e > at]
        assert after and metrics(resumed, name) == after, name
    last = checkpoint_name(spec.epochs)
    return (load_checkpoint(full / "checkpoints" / last), load_checkpoint(resumed / "checkpoints" / last))
