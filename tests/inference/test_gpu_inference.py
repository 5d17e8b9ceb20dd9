"""On a real GPU (`pytest -m gpu`; skipped without one): a GPU-trained job exports, and its
checkpoint gives the same predictions on the GPU as on the CPU."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest

from tests.training.model_helpers import make_dataset, model_spec
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.inference.export import export_model
from trainyard.inference.loader import load_model
from trainyard.training.loop import train

pytestmark = pytest.mark.requires_cuda(1)


@pytest.fixture(scope="module")
def gpu_job(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu")
    dataset = make_dataset(root / "ds", train=64, val=32, size=32, channels=3)
    with EventWriter(root / "job") as events:
        train(model_spec(dataset, network="resnet18", epochs=1, batch_size=16), root / "job", events)
    assert "on cuda" in (root / "job" / "log.txt").read_text()
    return root / "job"


def test_a_gpu_trained_job_exports(gpu_job, tmp_path):
    export_model(gpu_job, 1, tmp_path / "m.tar.gz")
    with tarfile.open(tmp_path / "m.tar.gz") as tar:
        assert any(name.endswith(".onnx") for name in tar.getnames())


def test_gpu_inference_matches_cpu_logits(gpu_job):
    checkpoint = gpu_job / "checkpoints" / checkpoint_name(1)
    inputs = np.random.default_rng(0).standard_normal((8, 3, 32, 32)).astype(np.float32)
    on_gpu = load_model(checkpoint, "cuda").logits(inputs)
    on_cpu = load_model(checkpoint, "cpu").logits(inputs)
    assert np.allclose(on_gpu, on_cpu, rtol=1e-2, atol=1e-2)  # TF32 on the GPU: close, not equal
    assert (on_gpu.argmax(1) == on_cpu.argmax(1)).all()
