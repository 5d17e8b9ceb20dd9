"""Checkpoints written directly (random weights), for tests that need no training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from trainyard.artifact.checkpoint import save_checkpoint
from trainyard.artifact.network import create_model

MLP_SOURCE = """
import torch
from torch import nn


def build(num_classes, in_channels, image_size):
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, 16), nn.Tanh(),
                         nn.Linear(16, num_classes))
"""


def write_checkpoint(path: Path, *, network: str | None = "lenet", source: str | None = None,
                     classes=("a", "b", "c"), stored: int = 32,
                     crop: int | None = 28, channels: int = 3, resize: str = "fill",
                     mean_mode: str = "image", epoch: float = 1, seed: int = 0) -> Path:
    """A valid trainyard checkpoint of ``network`` with random weights and a random mean image."""
    torch.manual_seed(seed)
    size = crop or stored
    model = create_model(network, source, len(classes), channels, size)
    mean = torch.from_numpy(np.random.default_rng(seed).uniform(60, 180, (stored, stored, channels)).astype(np.float32))
    checkpoint = {
        "model": model.state_dict(), "network": network, "network_source": source, "classes": list(classes),
        "image_size": size, "epoch": epoch, "spec": {},
        "preprocess": {"width": stored, "height": stored, "channels": channels, "resize": resize,
                       "mean_mode": mean_mode, "crop": crop, "scale": "0..1", "mean": mean},
    }
    return save_checkpoint(path, checkpoint)
