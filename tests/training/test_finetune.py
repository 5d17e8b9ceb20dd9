"""Fine-tuning from store weights: better than scratch on a small dataset, refused early when the
weights cannot be used, and the fine-tuning options (frozen backbone, backbone LR multiplier)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
from trainyard.core.errors import UserError
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.weights.store import WeightsStore

SHAPES = ["circle", "square", "triangle", "cross"]


def shapes(root, per_class: int, seed: int, names: list[str] | None = None):
    """Class folders of white-ish shapes at random places and sizes over dark noise, 28x28."""
    rng = np.random.default_rng(seed)
    for shape, name in zip(SHAPES, names or SHAPES):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            image = Image.fromarray(rng.integers(0, 80, (28, 28, 3), dtype=np.uint8))
            r = rng.uniform(5, 10)
            x, y = rng.uniform(r, 28 - r, 2)
            draw_shape(ImageDraw.Draw(image), shape, x, y, r, tuple(int(c) for c in rng.integers(150, 256, 3)))
            image.save(root / name / f"{i}.png")
    return root


def draw_shape(draw, shape: str, x: float, y: float, r: float, colour) -> None:
    box = [x - r, y - r, x + r, y + r]
    if shape == "circle":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.rectangle(box, fill=colour)
    elif shape == "triangle":
        draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=colour)
    else:  # a cross
        draw.line(box, colour, 3)
        draw.line([x - r, y + r, x + r, y - r], colour, 3)


def build(ctx, name: str, folder, val_percent: int) -> str:
    job = create_dataset_job(ctx, DatasetSpec(name=name, train_folder=str(folder), width=28, height=28,
                                              channels=3, val_percent=val_percent), foreground=True)
    job = ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert job.status == "done", job.error
    return job.id


def train(ctx, dataset: str, epochs: float, **extra):
    settings = {"epochs": epochs, "batch_size": 8, "seed": 0, "solver": "adam", "mean": "pixel",
                "lr": {"policy": "fixed", "base_lr": 0.002}, **extra.pop("settings", {})}
    [job] = create_model_jobs(ctx, TrainRequest(name="t", datasets=[dataset], networks=["lenet"],
                                                settings=settings, **extra), foreground=True)
    job = ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert job.status == "done", job.error
    return job


@pytest.fixture
def pretrained(ctx, settings):
    """lenet trained on four shapes, its weights imported into the store as "shapes-lenet"."""
    task = build(ctx, "shapes", shapes(settings.data_roots[0] / "a", 60, seed=1), 10)
    job = train(ctx, task, 4)
    path = checkpoint_for_epoch(ctx.manager.folder(job.id).path)
    WeightsStore.from_settings(settings).import_file("shapes-lenet", path, network="lenet")
    return "shapes-lenet"


def best(ctx, job) -> float:
    ckpt = load_checkpoint(checkpoint_for_epoch(ctx.manager.folder(job.id).path))
    return max(v for _, v in ckpt["metrics"]["val_accuracy"])


def test_fine_tuning_beats_scratch_on_a_small_dataset(ctx, settings, pretrained):
    # The same shapes under other names, 6 training images each: too few to learn from scratch.
    names = ["ball", "box", "wedge", "x"]
    small = build(ctx, "few", shapes(settings.data_roots[0] / "b", 14, seed=2, names=names), 57)
    scratch = train(ctx, small, 12)
    tuned = train(ctx, small, 12, pretrained=pretrained, settings={"backbone_lr_mult": 0.1})
    # Measured: about 93% against 68% (the shapes were learnt on the first task).
    assert best(ctx, tuned) > best(ctx, scratch) + 10, (best(ctx, tuned), best(ctx, scratch))
    ckpt = load_checkpoint(checkpoint_for_epoch(ctx.manager.folder(tuned.id).path))
    assert ckpt["head"] == ["classifier.3.bias", "classifier.3.weight"]
    assert len(ckpt["optimizer"]["param_groups"]) == 2  # head at base LR, backbone at a tenth
    assert ckpt["spec"]["pretrained_entry"] == "shapes-lenet"


def test_a_frozen_backbone_trains_only_the_new_classifier(ctx, settings, pretrained):
    small = build(ctx, "few", shapes(settings.data_roots[0] / "b", 6, seed=2), 50)
    job = train(ctx, small, 1, pretrained=pretrained, settings={"freeze_backbone": True})
    ckpt = load_checkpoint(checkpoint_for_epoch(ctx.manager.folder(job.id).path))
    assert ckpt["trainable"] == ["classifier.3.bias", "classifier.3.weight"]


def test_unusable_store_weights_are_refused_before_queuing(ctx, settings):
    small = build(ctx, "few", shapes(settings.data_roots[0] / "b", 6, seed=2), 50)
    request = dict(name="t", datasets=[small], settings={"epochs": 1})
    with pytest.raises(UserError, match="trainyard weights pull resnet18.imagenet1k_v1"):
        create_model_jobs(ctx, TrainRequest(networks=["resnet18"], pretrained="imagenet", **request))
    with pytest.raises(UserError, match="no published ImageNet weights for network lenet"):
        create_model_jobs(ctx, TrainRequest(networks=["lenet"], pretrained="imagenet", **request))
    with pytest.raises(UserError, match="are for network resnet18, not lenet"):
        create_model_jobs(ctx, TrainRequest(networks=["lenet"], pretrained="resnet18.imagenet", **request))
    assert not ctx.store.list_jobs(kind="model")
