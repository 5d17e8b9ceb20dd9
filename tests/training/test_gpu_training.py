"""On a real GPU (skipped without one; `pytest -m gpu` selects them): fp16 with its scaler, bf16,
precision=auto by capability, compiled training, and a custom network in 1 and 3 channels."""

from __future__ import annotations

import pytest
import torch
from model_helpers import VIEW_NET, make_dataset, metrics, model_spec

from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.training.loop import train

pytestmark = pytest.mark.requires_cuda(1)
FAST = {"policy": "fixed", "base_lr": 0.05}


def _train(spec, job_dir):
    with EventWriter(job_dir) as events:
        return train(spec, job_dir, events)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=96, val=32, size=20)


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp32", "auto"])
def test_each_precision_learns_on_the_gpu(dataset, tmp_path, precision):
    result = _train(model_spec(dataset, epochs=3, lr=FAST, precision=precision), tmp_path)
    log = (tmp_path / "log.txt").read_text()
    native_bf16 = torch.cuda.get_device_capability() >= (8, 0)
    used = {"auto": "bf16" if native_bf16 else "fp16"}.get(precision, precision)
    assert "on cuda" in log and f"({used})" in log
    assert result["val_accuracy"] > 80
    checkpoint = load_checkpoint(tmp_path / "checkpoints" / checkpoint_name(3))
    assert (checkpoint["scaler"] is not None) == (used == "fp16")  # fp16 trains with a GradScaler


def test_compiled_training_on_the_gpu(dataset, tmp_path):
    result = _train(model_spec(dataset, epochs=2, lr=FAST, compile=True), tmp_path)
    assert "torch.compile on" in (tmp_path / "log.txt").read_text()
    assert [e for e, _ in metrics(tmp_path, "val_accuracy")] == [1, 2] and result["val_accuracy"] > 80
    checkpoint = load_checkpoint(tmp_path / "checkpoints" / checkpoint_name(2))
    assert not [k for k in checkpoint["model"] if "_orig_mod" in k]


@pytest.mark.parametrize("channels", [1, 3])
def test_a_custom_network_that_trains_on_the_cpu_trains_on_the_gpu(tmp_path, channels):
    data = make_dataset(tmp_path / "ds", train=32, val=16, size=12, channels=channels)
    _train(model_spec(data, network=None, network_source=VIEW_NET, epochs=1), tmp_path / "job")
    log = (tmp_path / "job" / "log.txt").read_text()
    assert "on cuda" in log and "memory layout NCHW" in log
    assert len(metrics(tmp_path / "job", "val_accuracy")) == 1


def test_a_standard_network_is_channels_last_on_the_gpu(tmp_path):
    data = make_dataset(tmp_path / "ds", train=32, val=16, size=32, channels=3)
    _train(model_spec(data, network="resnet18", epochs=1), tmp_path / "job")
    assert "memory layout channels_last" in (tmp_path / "job" / "log.txt").read_text()
