"""Check a segmentation network (a standard one or a user's file) before training it: it builds,
and in training and eval mode maps (N, C, H, W) images to (N, num_classes, H, W) logits."""

from __future__ import annotations

import torch
from torch import nn

from .custom import NetworkError, build_model, run_forward


def check_segmenter_model(make, num_classes: int, in_channels: int, size: tuple[int, int],
                          filename: str = "network.py", batch: int = 2) -> tuple[nn.Module, list[int]]:
    """(the model, its output shape); NetworkError naming what is wrong."""
    model, lines = build_model(make, filename)
    x = torch.rand(batch, in_channels, *size)
    want = (batch, num_classes, *size)
    for training in (True, False):
        out = run_forward(model, lines, filename, training, lambda: model(x))
        mode = "training" if training else "eval"
        if not isinstance(out, torch.Tensor):
            raise NetworkError(f"a segmenter's output in {mode} mode is a {type(out).__name__}, not a tensor "
                               "of logits", None, filename)
        if tuple(out.shape) != want:
            raise NetworkError(f"the output in {mode} mode has shape {tuple(out.shape)}, expected {want} "
                               "(batch, num_classes, height, width): logits per pixel at the input's size "
                               "(smp networks need sides that are a multiple of 32)", None, filename)
    return model, list(want)
