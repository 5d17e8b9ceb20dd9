"""The detection half of building a run (build_run.py): loaders of boxes and the preprocessing.

The split readers build_run opened give the size; the boxes come from the same folders through
`DetectionSplit`. A detector's input is the stored image as 0..1 pixels (it normalises inside),
so the recorded preprocessing has no mean, and the dataset's resize mode (pad or squash) is
what inference fits a new image with before mapping its boxes back to the image's pixels.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainyard.artifact.preprocessing import NO_MEAN, Preprocessing
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.datasets.info import DatasetInfo
from trainyard.datasets.storage import SplitReader
from trainyard.networks.detection import label_offset
from trainyard.training.detection.data import DetectionBatchLoader
from trainyard.training.distributed import Dist
from trainyard.training.spec import ModelSpec

DEFAULT_DETECTION_RESIZE = "pad"


def loaders(spec: ModelSpec, info: DatasetInfo, train_split: SplitReader, val_split: SplitReader | None,
            batch_size: int, device: torch.device, seed: int, d: Dist, net: nn.Module
            ) -> tuple[DetectionBatchLoader, DetectionBatchLoader | None, Preprocessing]:
    """(train loader, val loader or None, the preprocessing checkpoints record)."""
    offset = label_offset(net)
    args: dict[str, Any] = dict(label_offset=offset, seed=seed, rank=d.rank, world_size=d.world_size)
    train = DetectionBatchLoader(DetectionSplit(train_split.folder), batch_size, device, train=True,
                                 augment=spec.augment, epochs=spec.epochs, **args)
    val = DetectionBatchLoader(DetectionSplit(val_split.folder), batch_size, device, **args) if val_split else None
    height, width, channels = train_split.shape
    preprocess = Preprocessing(width=width, height=height, channels=channels,
                               resize=info.resize or DEFAULT_DETECTION_RESIZE, mean_mode=NO_MEAN)
    return train, val, preprocess
