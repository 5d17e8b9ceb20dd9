"""The segmentation half of building a run (build_run.py): loaders of masks and the preprocessing.

A segmenter's input is the stored image as 0..1 pixels, so the recorded preprocessing has no
mean; inference squashes a new image to the stored size, as the dataset was built, and maps the
predicted mask back to the image's own size by nearest neighbour.
"""

from __future__ import annotations

import torch
from torch import nn

from trainyard.artifact.preprocessing import NO_MEAN, Preprocessing
from trainyard.datasets.info import DatasetInfo
from trainyard.datasets.segmentation.store import SegmentationSplit
from trainyard.datasets.storage import SplitReader
from trainyard.training.distributed import Dist
from trainyard.training.segmentation.data import SegmentationBatchLoader
from trainyard.training.spec import ModelSpec


def loaders(spec: ModelSpec, info: DatasetInfo, train_split: SplitReader, val_split: SplitReader | None,
            batch_size: int, device: torch.device, seed: int, d: Dist, net: nn.Module
            ) -> tuple[SegmentationBatchLoader, SegmentationBatchLoader | None, Preprocessing]:
    """(train loader, val loader or None, the preprocessing checkpoints record)."""
    train = SegmentationBatchLoader(SegmentationSplit(train_split.folder), batch_size, device, train=True,
                                    augment=spec.augment, seed=seed, rank=d.rank, world_size=d.world_size)
    val = (SegmentationBatchLoader(SegmentationSplit(val_split.folder), batch_size, device, seed=seed,
                                   rank=d.rank, world_size=d.world_size)
           if val_split else None)
    height, width, channels = train_split.shape
    preprocess = Preprocessing(width=width, height=height, channels=channels, resize=info.resize or "squash",
                               mean_mode=NO_MEAN)
    return train, val, preprocess
