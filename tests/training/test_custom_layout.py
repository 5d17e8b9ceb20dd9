"""A custom network that trains on the CPU trains on a GPU: trainyard never changes a custom
network's memory layout, and its 1-channel batches have plain NCHW strides.

The network below flattens with ``x.view(n, -1)`` after a convolution, which fails on a
channels_last activation; on 1-channel data the batch's strides alone made the convolution's
output channels_last on the CPU. A 5-D parameter (Conv3d) cannot be made channels_last at all.
"""

from __future__ import annotations

import pytest
import torch
from model_helpers import VIEW_NET, make_dataset, metrics, model_spec, one_thread

from trainyard.core.events import EventWriter
from trainyard.training.build_run import prepare
from trainyard.training.loop import train
from trainyard.training.memory_format import to_channels_last, use_channels_last

CUDA = torch.device("cuda", 0)


@pytest.mark.parametrize("channels", [1, 3])
def test_a_custom_network_flattening_with_view_trains(tmp_path, channels):
    dataset = make_dataset(tmp_path / "ds", train=32, val=16, size=12, channels=channels)
    spec = model_spec(dataset, network=None, network_source=VIEW_NET, epochs=1)
    with EventWriter(tmp_path / "job") as events, one_thread():
        result = train(spec, tmp_path / "job", events)
    assert result["epoch"] == 1 and len(metrics(tmp_path / "job", "val_accuracy")) == 1


def test_no_custom_network_is_made_channels_last(tmp_path):
    dataset = make_dataset(tmp_path / "ds", train=8, val=0, size=12, channels=3)
    spec = model_spec(dataset, network=None, network_source=VIEW_NET)
    assert use_channels_last(spec, CUDA) is False
    assert use_channels_last(spec, torch.device("cpu")) is False
    assert use_channels_last(model_spec(dataset), CUDA) is True  # a standard network
    assert use_channels_last(model_spec(dataset, network="resnet18"), CUDA) is True


def test_a_network_with_a_5d_parameter_keeps_its_layout():
    conv3d = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Conv3d(1, 1, 1))
    assert to_channels_last(conv3d) is False
    assert conv3d[0].weight.is_contiguous()
    plain = torch.nn.Conv2d(3, 4, 3)
    assert to_channels_last(plain) and plain.weight.is_contiguous(memory_format=torch.channels_last)


def test_one_channel_batches_have_plain_strides(tmp_path):
    dataset = make_dataset(tmp_path / "ds", train=16, val=0, size=12, channels=1)
    spec = model_spec(dataset, network=None, network_source=VIEW_NET)
    with EventWriter(tmp_path / "job") as events:
        run = prepare(spec, tmp_path / "job", events)
    images, _ = next(run.train_loader.batches(0))
    assert images.stride() == (144, 144, 12, 1)  # (N, 1, 12, 12) in NCHW order, not NHWC's
