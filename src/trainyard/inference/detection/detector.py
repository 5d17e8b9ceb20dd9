"""A detection checkpoint loaded for inference, kept in a small cache so warm requests do not reload.

The detector is built from its checkpoint (standard network by name, or a custom file's source
where the caller allows user code: a sandboxed process, detection/confined.py) at the stored
image size it trained at, in eval mode. It answers `boxes` for a batch of stored-size images:
per image, boxes (x1, y1, x2, y2 in stored pixels), scores and the dataset's class indices (the
model's background offset removed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trainyard.artifact.checkpoint import CheckpointHeader
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.tasks import task_traits
from trainyard.inference.model_cache import ModelCache, file_key
from trainyard.inference.snapshots import InferenceError

if TYPE_CHECKING:
    from torch import nn

CACHE_SIZE = 2  # detectors are large; the server keeps the two last used
_cache: ModelCache[LoadedDetector] = ModelCache(CACHE_SIZE)


class NotADetector(InferenceError):
    """A checkpoint of a classification model where boxes were asked for (or the reverse)."""


class CustomDetector(InferenceError):
    """A custom detector's checkpoint, asked for by a process that must not run user source (its
    model worker does: detection/confined.py)."""


@dataclass
class LoadedDetector:
    path: Path
    model: nn.Module
    classes: list[str]
    preprocess: Preprocessing
    offset: int  # the model's label of class 0
    network: str | None = None  # a standard network's name; None for a custom one
    device: str = "cpu"

    def boxes(self, batch: np.ndarray) -> list[dict[str, np.ndarray]]:
        """(N, H, W, C) uint8 stored-size images -> per image {"boxes", "scores", "labels"}."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(batch)).permute(0, 3, 1, 2).float().div_(255)
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        with torch.inference_mode():
            found = self.model(x.to(self.device))
        return [{"boxes": f["boxes"].float().cpu().numpy(), "scores": f["scores"].float().cpu().numpy(),
                 "labels": f["labels"].cpu().numpy() - self.offset} for f in found]


def checkpoint_task(checkpoint: dict) -> str:
    return CheckpointHeader.of(checkpoint).task


def load_detector(path: str | os.PathLike, device: str = "cpu", *, user_code: bool = True) -> LoadedDetector:
    """The detector of checkpoint ``path``, from the cache when the file has not changed."""
    path = Path(path)
    return _cache.get((*file_key(path, InferenceError), device), lambda: _load(path, device, user_code))


def _load(path: Path, device: str, user_code: bool) -> LoadedDetector:
    from trainyard.artifact.checkpoint import build_model_from_checkpoint, load_checkpoint
    from trainyard.networks.detection import label_offset

    checkpoint = load_checkpoint(path)
    header = CheckpointHeader.of(checkpoint)
    if not task_traits(header.task).boxes:
        raise NotADetector(f"{path.name} is a classification model: classify with it, or train a detector")
    if header.network_source and not user_code:
        raise CustomDetector(f"{path.name} is a custom network: it runs only in its sandboxed worker")
    model = build_model_from_checkpoint(checkpoint).to(device)
    return LoadedDetector(path, model, list(header.classes), Preprocessing.of_checkpoint(checkpoint),
                          label_offset(model), header.network, device)
