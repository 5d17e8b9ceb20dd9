"""CPU inference through ONNX Runtime gives PyTorch's answers, caches its export, falls back."""

from __future__ import annotations

import logging
import os

import numpy as np
import torch
from PIL import Image

from tests.inference.checkpoints import write_checkpoint
from tests.trained_model import colour_image
from trainyard.inference import loader, ort_runtime
from trainyard.inference.classify import prepare, probabilities, torch_probabilities
from trainyard.inference.loader import load_model, model_checkpoint


def _images(count: int, seed: int) -> list[Image.Image]:
    """Noise images of odd sizes: uncertain predictions, the hard case for agreement."""
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (int(rng.integers(20, 60)), int(rng.integers(20, 60)), 3),
                                         dtype=np.uint8)) for _ in range(count)]


def _compare(loaded, images) -> None:
    """Both runtimes on the same prepared inputs: top-1 equal, probabilities within 1e-4."""
    for start in range(0, len(images), 64):
        inputs = prepare(loaded, images[start:start + 64]).inputs
        expected, got = torch_probabilities(loaded, inputs), probabilities(loaded, inputs)
        assert torch.equal(got.argmax(1), expected.argmax(1))
        assert float((got - expected).abs().max()) <= 1e-4


def test_trained_model_answers_the_same_through_onnx_runtime(trained):
    _, path = model_checkpoint(trained.ctx.manager.folder(trained.model_id).path)
    loaded = load_model(path)
    assert loaded.cpu_forward() is not None, "the ONNX path must be taken on a CPU"
    colours = [colour_image(name, seed) for name in trained.classes for seed in range(100)]
    _compare(loaded, colours + _images(100, seed=3))  # 400 images
    assert ort_runtime.onnx_path(path).is_file()  # exported once, cached beside the checkpoint


def test_a_deeper_network_answers_the_same(tmp_path):
    """ResNet-18 (batch norm folded by the export, an adaptive pool) with random weights."""
    loaded = load_model(write_checkpoint(tmp_path / "epoch-0001.pt", network="resnet18", stored=40, crop=32))
    assert loaded.cpu_forward() is not None
    _compare(loaded, _images(16, seed=4))


def test_the_export_is_cached_and_reused_by_a_later_load(tmp_path, monkeypatch):
    path = write_checkpoint(tmp_path / "epoch-0001.pt")
    assert load_model(path).cpu_forward() is not None
    cached = ort_runtime.onnx_path(path)
    assert cached.name == "epoch-0001.pt.onnx" and cached.stat().st_size > 0
    loader._cache.clear()

    def no_export(*args, **kwargs):
        raise AssertionError("exported again although the cache is fresh")

    monkeypatch.setattr("trainyard.inference.onnx_export.export_onnx", no_export)
    assert load_model(path).cpu_forward() is not None


def test_a_rewritten_checkpoint_is_exported_again(tmp_path):
    path = write_checkpoint(tmp_path / "epoch-0001.pt", seed=0)
    load_model(path).cpu_forward()
    first = ort_runtime.onnx_path(path).read_bytes()
    write_checkpoint(path, seed=5)  # a resumed job writes the epoch again: new weights
    os.utime(path, ns=(ort_runtime.onnx_path(path).stat().st_mtime_ns + 10**9,) * 2)
    loaded = load_model(path)
    assert loaded.cpu_forward() is not None and ort_runtime.onnx_path(path).read_bytes() != first
    _compare(loaded, _images(8, seed=6))


def test_a_failed_export_falls_back_to_pytorch_with_the_reason_logged(tmp_path, monkeypatch, caplog):
    path = write_checkpoint(tmp_path / "epoch-0001.pt")

    def broken(*args, **kwargs):
        raise RuntimeError("unsupported operator Foo")

    monkeypatch.setattr("trainyard.inference.onnx_export.export_onnx", broken)
    loaded = load_model(path)
    inputs = prepare(loaded, _images(4, seed=7)).inputs
    with caplog.at_level(logging.WARNING, logger="trainyard.inference.ort_runtime"):
        got = probabilities(loaded, inputs)
    assert loaded.cpu_forward() is None
    assert "unsupported operator Foo" in caplog.text and "PyTorch answers" in caplog.text
    assert torch.equal(got, torch_probabilities(loaded, inputs))
    assert not ort_runtime.onnx_path(path).exists()


def test_the_environment_can_turn_the_onnx_path_off(tmp_path, monkeypatch):
    monkeypatch.setenv(ort_runtime.RUNTIME_ENV, "torch")
    loaded = load_model(write_checkpoint(tmp_path / "epoch-0001.pt"))
    assert loaded.cpu_forward() is None
    assert not ort_runtime.onnx_path(loaded.path).exists()
