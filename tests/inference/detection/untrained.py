"""A detector job made without training (an untrained SSDlite): the weak detector of the export
mends (issue 41), built in a second where the trained fixture takes minutes."""

from __future__ import annotations

from pathlib import Path

import torch

from trainyard.artifact.checkpoint import save_checkpoint
from trainyard.artifact.network import create_model
from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.networks.detection import fit_input

NETWORK = "ssdlite320_mobilenet_v3_large"
SIZE = 64


def make_detector_job(job_dir: Path, seed: int = 0) -> Path:
    """A model job folder with one checkpoint (epoch 1) of an untrained 64x64 two-class SSDlite."""
    torch.manual_seed(seed)
    model = create_model(NETWORK, None, 2, 3, SIZE)
    fit_input(model, SIZE, SIZE)
    checkpoint = {
        "model": model.state_dict(), "network": NETWORK, "network_source": None,
        "classes": ["square", "disc"], "image_size": SIZE, "task": "detection",
        "preprocess": {"width": SIZE, "height": SIZE, "channels": 3, "resize": "pad", "mean_mode": "none",
                       "crop": None, "scale": "0..1", "mean": None},
        "epoch": 1, "metrics": {}, "best": None, "spec": {"id": job_dir.name, "name": "weak", "dataset_id": "none"},
    }
    save_checkpoint(JobFolder(job_dir).checkpoints / checkpoint_name(1), checkpoint)
    return job_dir
