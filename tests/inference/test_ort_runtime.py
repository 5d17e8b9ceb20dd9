"""CPU inference through ONNX Runtime gives PyTorch's answers, caches its export, falls back."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from tests.inference.checkpoints import write_checkpoint
from tests.trained_model import colour_image
from trainyard.artifact.checkpoint import build_model_from_checkpoint, load_checkpoint
from trainyard.artifact.inputs import prepare_pixels
from trainyard.artifact.normalize import mean_tensor, normalize_batch, std_tensor
from trainyard.inference import loader, ort_runtime
from trainyard.inference.classify import classify, prepare, probabilities, softmax
from trainyard.inference.loader import load_model, model_checkpoint
from trainyard.inference.torch_forward import torch_logits


def torch_probabilities(loaded, inputs: np.ndarray) -> np.ndarray:
    """PyTorch's answer for the same inputs (what a GPU, or the fallback, gives)."""
    return softmax(torch_logits(loaded.model, inputs, "cpu"))


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
        assert np.array_equal(got.argmax(1), expected.argmax(1))
        assert float(np.abs(got - expected).max()) <= 1e-4


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
    monkeypatch.setattr("trainyard.inference.torch_forward.read_checkpoint", no_export)
    again = load_model(path)
    assert again.cpu_forward() is not None and again._model is None  # the checkpoint was not read
    assert classify(again, _images(4, seed=8))[0][0][0] in again.classes


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
    network = build_model_from_checkpoint(load_checkpoint(path))  # built apart from the loader's
    with torch.no_grad():
        expected = torch.softmax(network(torch.from_numpy(inputs)), dim=1).numpy()
    assert np.allclose(got, expected, atol=1e-6)
    assert not ort_runtime.onnx_path(path).exists()


def test_the_environment_can_turn_the_onnx_path_off(tmp_path, monkeypatch):
    monkeypatch.setenv(ort_runtime.RUNTIME_ENV, "torch")
    loaded = load_model(write_checkpoint(tmp_path / "epoch-0001.pt"))
    assert loaded.cpu_forward() is None
    assert not ort_runtime.onnx_path(loaded.path).exists()


CLASSIFY_FROM_CACHE = """
import json, sys
from pathlib import Path
from PIL import Image
from trainyard.inference.classify import classify
from trainyard.inference.loader import load_model
from trainyard.inference.many import classify_many
from trainyard.inference.sources import count_list, list_items
loaded = load_model(sys.argv[1])
results = classify(loaded, [Image.new("RGB", (30, 30), (200, 10, 10))])
listing, out = Path(sys.argv[2]), Path(sys.argv[3])
many = classify_many(loaded, list_items(listing, loaded.classes, listing.parent), out, total=count_list(listing))
print(json.dumps({"results": results, "many": many["classified"], "torch": "torch" in sys.modules}))
"""


def test_a_later_process_classifies_from_the_cache_without_importing_torch(tmp_path):
    """A classify-many job, the CLI or the server, once the export is cached: no torch at all."""
    path = write_checkpoint(tmp_path / "epoch-0001.pt")
    first = load_model(path)
    expected = classify(first, [Image.new("RGB", (30, 30), (200, 10, 10))])
    assert ort_runtime.inputs_path(path).is_file()
    for i, image in enumerate(_images(5, seed=9)):
        image.save(tmp_path / f"{i}.png")
    (tmp_path / "list.txt").write_text("".join(f"{i}.png\n" for i in range(5)))
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-c", CLASSIFY_FROM_CACHE, str(path), str(tmp_path / "list.txt"),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120, check=True)
    doc = json.loads(done.stdout.splitlines()[-1])
    assert doc == {"results": expected, "many": 5, "torch": False}


@pytest.mark.parametrize("mode", ["image", "pixel", "none"])
def test_inference_inputs_equal_validation_batches_to_the_bit(mode):
    """artifact/inputs.py (numpy, inference) against normalize_batch (torch, validation)."""
    rng = np.random.default_rng(0)
    batch = rng.integers(0, 256, (6, 40, 36, 3), dtype=np.uint8)
    mean_image = rng.random((40, 36, 3)).astype(np.float32) * 255
    mean, std = mean_tensor(mean_image, mode, 32), std_tensor([0.229, 0.224, 0.225])
    expected = normalize_batch(torch.from_numpy(batch), mean, 32, std=std).numpy()
    got = prepare_pixels(batch, 32, None if mean is None else mean.numpy(), std.numpy()).inputs
    assert got.dtype == np.float32 and np.array_equal(got, expected)


def test_the_job_device_is_the_cpu_behind_an_empty_or_fake_gpu(monkeypatch):
    """The runner's empty CUDA_VISIBLE_DEVICES means the CPU; a fake GPU ("0" on a machine
    without one, TRAINYARD_FAKE_GPUS) is whatever torch finds behind it."""
    from trainyard.inference.tasks import job_device

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert job_device() == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert job_device() == ("cuda" if torch.cuda.is_available() else "cpu")
