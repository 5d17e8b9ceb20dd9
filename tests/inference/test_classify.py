"""Classifying single images: the training's preprocessing, top-k, the model cache, bad input."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
import torch
from PIL import Image

from tests.inference.checkpoints import write_checkpoint
from tests.trained_model import colour_image
from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.artifact.inputs import resize_for_input
from trainyard.artifact.normalize import input_mean, input_std, normalize_batch
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.classify import classify, decode, prepare, top_predictions
from trainyard.inference.loader import (
    InferenceError,
    NotFound,
    NotReady,
    load_model,
    model_checkpoint,
)


def odd_image(seed: int) -> Image.Image:
    """A non-square RGB image, so resize modes really differ."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8))


@pytest.mark.parametrize("resize, mean_mode, crop", [("fill", "image", 28), ("crop", "pixel", 28),
                                                     ("squash", "none", None), ("half_crop", "image", None)])
def test_prepare_is_exactly_the_training_preprocessing(tmp_path, resize, mean_mode, crop):
    loaded = load_model(write_checkpoint(tmp_path / "m.pt", resize=resize, mean_mode=mean_mode, crop=crop))
    images = [odd_image(1), odd_image(2).convert("L")]
    prepared = prepare(loaded, images)
    # What training's batch loader makes of the same stored pixels (a validation batch).
    stored = Preprocessing.of_checkpoint(load_checkpoint(loaded.path))
    pixels = torch.from_numpy(np.stack([resize_for_input(image, loaded.preprocess) for image in images]))
    expected = normalize_batch(pixels, input_mean(stored), crop, std=input_std(stored))
    assert np.array_equal(prepared.inputs, expected.numpy())
    size = crop or 32
    assert prepared.pixels.shape == (2, size, size, 3) and prepared.pixels.dtype == np.uint8


def test_trained_model_gets_fresh_images_right(trained):
    _, path = model_checkpoint(trained.ctx.manager.folder(trained.model_id).path)
    loaded = load_model(path)
    images = [colour_image(name, seed) for name in trained.classes for seed in range(3)]
    results = classify(loaded, images, top=5)
    assert [r[0][0] for r in results] == [name for name in trained.classes for _ in range(3)]
    for predictions in results:
        assert len(predictions) == 3  # top 5 of 3 classes
        confidences = [c for _, c in predictions]
        assert confidences == sorted(confidences, reverse=True)
        assert all(0 <= c <= 1 for c in confidences) and sum(confidences) == pytest.approx(1, abs=1e-4)


def test_top_predictions_shape():
    probs = np.array([[0.1, 0.7, 0.2]], np.float32)
    assert top_predictions(probs, ["a", "b", "c"], 2) == [[["b", pytest.approx(0.7)], ["c", pytest.approx(0.2)]]]


def test_loaded_models_are_cached_until_the_file_changes(tmp_path):
    path = write_checkpoint(tmp_path / "m.pt")
    first = load_model(path)
    assert load_model(path) is first
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a rewritten checkpoint
    assert load_model(path) is not first


def test_missing_snapshot_and_epoch(tmp_path):
    with pytest.raises(NotReady, match="no snapshot yet"):
        model_checkpoint(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    write_checkpoint(tmp_path / "checkpoints" / "epoch-0002.pt")
    assert model_checkpoint(tmp_path)[0] == 2
    with pytest.raises(NotFound, match="epochs with one: 2"):
        model_checkpoint(tmp_path, 5)


def test_unusable_uploads_and_files(tmp_path):
    loaded = load_model(write_checkpoint(tmp_path / "m.pt"))
    buf = io.BytesIO()
    odd_image(0).save(buf, "JPEG")
    with pytest.raises(InferenceError, match="not a usable image"):
        decode(b"just some text", loaded)
    with pytest.raises(InferenceError, match="corrupt or truncated"):
        decode(buf.getvalue()[:200], loaded)
    (tmp_path / "not.pt").write_text("hello")
    with pytest.raises(InferenceError, match="not a readable checkpoint"):
        load_model(tmp_path / "not.pt")
    with pytest.raises(InferenceError, match="top must be"):
        classify(loaded, [odd_image(0)], top=0)


def test_a_process_without_user_code_reads_a_custom_checkpoint_once_and_never_builds_it(tmp_path, monkeypatch):
    """The server learns that a checkpoint is a custom network once (then a worker serves it),
    not on every request, and never runs its source."""
    from trainyard.inference import loader, torch_forward
    from trainyard.networks import network_source

    path = write_checkpoint(tmp_path / "custom.pt", network=None, source=network_source("lenet"))
    reads, read = [], torch_forward.read_checkpoint
    monkeypatch.setattr(torch_forward, "read_checkpoint", lambda p: reads.append(p) or read(p))
    monkeypatch.setattr(torch_forward, "build_network", lambda *a: pytest.fail("user code built"))
    for _ in range(3):
        with pytest.raises(loader.UserCode):
            load_model(path, user_code=False)
    assert len(reads) == 1
