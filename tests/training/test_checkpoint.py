"""Checkpoints: self-describing, weights_only round trip, finding them, and fine-tuning from them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from model_helpers import make_dataset, model_spec
from PIL import Image
from safetensors.torch import save_file

from trainyard.artifact.checkpoint import (
    FORMAT,
    CheckpointError,
    build_model_from_checkpoint,
    checkpoint_for_epoch,
    latest_checkpoint,
    load_checkpoint,
)
from trainyard.artifact.normalize import mean_tensor, preprocess_images
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.datasets.storage import open_split
from trainyard.training.build_run import prepare
from trainyard.training.data import BatchLoader
from trainyard.training.loop import evaluate, train
from trainyard.training.state import TrainingError


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds")
    two = make_dataset(root / "two", train=64, val=16, size=18, channels=3)
    three = make_dataset(root / "three", train=48, val=12, size=18, channels=3, classes=["h", "v", "flat"])
    return two, three


@pytest.fixture(scope="module")
def trained(datasets, tmp_path_factory):
    """A job trained for 2 epochs on the two-class set, with a crop and a snapshot per epoch."""
    job = tmp_path_factory.mktemp("job")
    spec = model_spec(datasets[0], epochs=2, crop=16, lr={"policy": "fixed", "base_lr": 0.05})
    with EventWriter(job) as events:
        train(spec, job, events)
    return job


def test_checkpoint_describes_itself_and_loads_weights_only(trained, datasets):
    path = latest_checkpoint(trained)
    assert path.name == checkpoint_name(2)
    raw = torch.load(path, weights_only=True)  # no code runs: only plain types and tensors
    ckpt = load_checkpoint(path)
    assert raw.keys() == ckpt.keys() and ckpt["format"] == FORMAT
    assert ckpt["network"] == "lenet" and ckpt["network_source"] is None
    assert ckpt["classes"] == ["horizontal", "vertical"]
    assert ckpt["epoch"] == 2 and ckpt["iteration"] == ckpt["batches"] == 8
    prep = ckpt["preprocess"]
    assert (prep["width"], prep["height"], prep["channels"], prep["crop"]) == (18, 18, 3, 16)
    assert prep["mean_mode"] == "image" and prep["scale"] == "0..1" and prep["resize"] == "squash"
    assert torch.equal(prep["mean"], torch.from_numpy(np.load(datasets[0] / "mean.npy")))
    assert [e for e, _ in ckpt["metrics"]["val_accuracy"]] == [1, 2]
    assert ckpt["spec"]["network"] == "lenet" and ckpt["rng"]["seed"] == 1
    assert {"optimizer", "scheduler", "model"} <= ckpt.keys()


def test_model_from_checkpoint_reproduces_validation(trained, datasets):
    """build_model_from_checkpoint + preprocess_images give the accuracy validation reported."""
    ckpt = load_checkpoint(latest_checkpoint(trained))
    model = build_model_from_checkpoint(ckpt)
    assert not model.training
    reader = open_split(datasets[0], "val")
    images = [Image.fromarray(reader.read(i)) for i in range(len(reader))]
    with torch.no_grad():
        predictions = model(preprocess_images(images, Preprocessing.of_checkpoint(ckpt))).argmax(1).numpy()
    accuracy = 100.0 * (predictions == reader.labels).mean()
    assert accuracy == pytest.approx(ckpt["metrics"]["val_accuracy"][-1][1])
    # and evaluate() over the loader agrees
    prep = ckpt["preprocess"]
    mean = mean_tensor(prep["mean"], prep["mean_mode"], prep["crop"])
    loader = BatchLoader(reader, 5, mean=mean, crop=prep["crop"])
    assert evaluate(model, loader)["val_accuracy"] == pytest.approx(accuracy)


def test_finding_checkpoints(trained, tmp_path):
    assert checkpoint_for_epoch(trained, 1).name == checkpoint_name(1)
    assert checkpoint_for_epoch(trained).name == checkpoint_name(2)
    with pytest.raises(CheckpointError, match=r"no checkpoint for epoch 7 \(epochs with one: 1, 2\)"):
        checkpoint_for_epoch(trained, 7)
    assert latest_checkpoint(tmp_path) is None
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / ".epoch-0009.pt.abc.tmp").write_bytes(b"half")  # an interrupted write
    assert latest_checkpoint(tmp_path) is None


def test_other_files_are_not_checkpoints(tmp_path):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="not a trainyard-checkpoint/1 file"):
        load_checkpoint(tmp_path / "x.pt")


def test_pretrained_with_other_class_count_reinitialises_the_classifier(trained, datasets, tmp_path):
    source = load_checkpoint(checkpoint_for_epoch(trained, 1))["model"]
    spec = model_spec(datasets[1], crop=16, pretrained=str(checkpoint_for_epoch(trained, 1)))
    with EventWriter(tmp_path) as events:
        run = prepare(spec, tmp_path, events)
    state = run.net.state_dict()
    assert torch.equal(state["features.0.weight"], source["features.0.weight"])
    assert torch.equal(state["classifier.1.weight"], source["classifier.1.weight"])
    assert state["classifier.3.weight"].shape == (3, 500) != source["classifier.3.weight"].shape
    log = (tmp_path / "log.txt").read_text()
    assert "re-initialised" in log and "classifier.3.weight" in log and "classifier.3.bias" in log


def test_freeze_backbone_trains_only_the_classifier(trained, datasets, tmp_path):
    weights = tmp_path / "weights.safetensors"
    save_file(load_checkpoint(latest_checkpoint(trained))["model"], str(weights))
    spec = model_spec(datasets[1], epochs=1, crop=16, pretrained=str(weights), freeze_backbone=True)
    with EventWriter(tmp_path / "job") as events:
        train(spec, tmp_path / "job", events)
    ckpt = load_checkpoint(latest_checkpoint(tmp_path / "job"))
    before = load_checkpoint(latest_checkpoint(trained))["model"]
    assert ckpt["trainable"] == ["classifier.3.weight", "classifier.3.bias"]
    assert torch.equal(ckpt["model"]["features.0.weight"], before["features.0.weight"])
    assert torch.equal(ckpt["model"]["classifier.1.weight"], before["classifier.1.weight"])


def test_pretrained_weights_that_do_not_fit_are_refused(datasets, tmp_path):
    save_file({"other.weight": torch.zeros(3, 3)}, str(tmp_path / "w.safetensors"))
    spec = model_spec(datasets[0], pretrained=str(tmp_path / "w.safetensors"))
    with EventWriter(tmp_path / "job") as events:
        with pytest.raises(TrainingError, match="no tensor of w.safetensors fits"):
            prepare(spec, tmp_path / "job", events)


def test_pickled_code_is_never_loaded(datasets, tmp_path):
    torch.save({"model": {"w": torch.zeros(1)}, "evil": Image.new("L", (1, 1))}, tmp_path / "evil.pt")
    spec = model_spec(datasets[0], pretrained=str(tmp_path / "evil.pt"))
    with EventWriter(tmp_path / "job") as events:
        with pytest.raises(TrainingError, match="cannot read pretrained"):
            prepare(spec, tmp_path / "job", events)
