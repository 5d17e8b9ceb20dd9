"""Which memory layout a run's network and batches use: channels_last where it is known to be
faster and safe (standard networks on a GPU, LeNet and ResNets on the CPU), NCHW otherwise."""

from __future__ import annotations

import torch
from torch import nn

from trainyard.core.tasks import task_traits
from trainyard.training.spec import ModelSpec

# Network families whose training and validation are faster in channels_last on the CPU as well
# (oneDNN's NHWC convolutions; bench/training/train.py measures it, with and without): LeNet and the
# ResNets. Others keep NCHW on the CPU until measured. The choice follows from the spec and the
# device alone, so a resumed run makes the same one and continues bit for bit.
CPU_CHANNELS_LAST = ("lenet", "resnet")


def use_channels_last(spec: ModelSpec, device: torch.device) -> bool:
    """Whether the network and its batches use the channels_last memory layout.

    Never for a custom network: its code may flatten with ``x.view(n, -1)`` (which fails on a
    channels_last activation) or hold 5-D parameters, and nothing but running it in that layout
    would tell; a network that trains on the CPU must train on a GPU as it is. The standard
    networks flatten with ``torch.flatten`` and are tested in both layouts.
    """
    if not spec.channels_last or not spec.network:
        return False
    if task_traits(spec.task).boxes:  # a detector batches its own (resized) copy of the images
        return False
    if device.type == "cuda":
        return True
    return device.type == "cpu" and spec.network.startswith(CPU_CHANNELS_LAST)


def to_channels_last(net: nn.Module) -> bool:
    """Put the network's 4-D tensors in channels_last; False (and nothing changed) when it holds
    a tensor of another rank that `Module.to` would refuse (a Conv3d's 5-D weight)."""
    if any(t.dim() == 5 for t in (*net.parameters(), *net.buffers())):
        return False
    # what cuDNN's and oneDNN's fastest convolutions want
    net.to(memory_format=torch.channels_last)
    return True
