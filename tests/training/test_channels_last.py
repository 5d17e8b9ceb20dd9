"""channels_last on the CPU for the network families it speeds up (bench/training/train.py measures it):
the network and its batches use it, a resumed run continues exactly, and precision=auto stays
fp32 on the CPU."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_dataset, model_spec, one_thread, train_and_resume

from trainyard.core.events import EventWriter
from trainyard.training.build_run import autocast_dtype, prepare
from trainyard.training.memory_format import use_channels_last

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def rgb(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "rgb", train=48, val=16, size=32, channels=3)


@pytest.mark.parametrize("network, expected", [("lenet", True), ("resnet18", True), ("resnet50", True),
                                               ("vgg16", False), ("timm:test_resnet", False)])
def test_the_cpu_uses_channels_last_for_the_families_it_speeds_up(rgb, network, expected):
    assert use_channels_last(model_spec(rgb, network=network), CPU) is expected
    assert use_channels_last(model_spec(rgb, network=network, channels_last=False), CPU) is False
    assert use_channels_last(model_spec(rgb, network=network), torch.device("cuda", 0)) is True


def test_precision_auto_stays_fp32_on_the_cpu():
    assert autocast_dtype("auto", CPU) is None  # bf16 autocast was 0.31x on a CPU without bf16


def test_a_resnet_and_its_batches_are_channels_last_on_the_cpu(rgb, tmp_path):
    with EventWriter(tmp_path) as events, one_thread():
        run = prepare(model_spec(rgb, network="resnet18", epochs=1), tmp_path, events)
        images, _ = next(run.train_loader.batches(0))
        val_images, _ = next(run.val_loader.batches(0))
    assert run.net.conv1.weight.is_contiguous(memory_format=torch.channels_last)
    assert images.is_contiguous(memory_format=torch.channels_last)
    assert val_images.is_contiguous(memory_format=torch.channels_last)  # validation too


def test_resume_in_channels_last_is_exact(rgb, tmp_path):
    spec = model_spec(rgb, epochs=2, snapshot_interval=0.5, val_interval=0.5, solver="adam")
    assert use_channels_last(spec, CPU)
    full, resumed = train_and_resume(spec, tmp_path)
    final_full, final_resumed = full["model"], resumed["model"]
    assert all(torch.equal(final_full[k], final_resumed[k]) for k in final_full)


@pytest.mark.parametrize("capability, expected", [((7, 0), torch.float16), ((7, 5), torch.float16),
                                                  ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)])
def test_precision_auto_is_bf16_from_ampere_and_fp16_before(monkeypatch, capability, expected):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # emulated counts too
    cuda = torch.device("cuda", 0)
    assert autocast_dtype("auto", cuda) is expected
    assert autocast_dtype("fp32", cuda) is None and autocast_dtype("bf16", cuda) is torch.bfloat16


@pytest.mark.parametrize("device", [CPU, torch.device("cuda", 0)])
def test_a_detector_runs_and_is_logged_nchw(device):
    """A detector batches its own resized copy of the images: never channels_last, so the
    training log's "memory layout" (the loader's flag) says NCHW, as runs (issue 41)."""
    from types import SimpleNamespace

    spec = SimpleNamespace(channels_last=True, network="resnet18", task="detection")
    assert use_channels_last(spec, device) is False  # type: ignore[arg-type]
    assert use_channels_last(SimpleNamespace(channels_last=True, network="resnet18", task="classification"),
                             device) is True  # type: ignore[arg-type]
