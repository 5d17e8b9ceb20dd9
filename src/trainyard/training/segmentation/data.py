"""Batches of a stored segmentation split: images as a (N, C, H, W) 0..1 tensor, masks as
(N, H, W) int64 class indices (255 = ignore).

`SegmentationBatchLoader` is classification's `BatchLoader` (order, sharding over ranks,
read-ahead, exact resume) with a batch's labels replaced by its masks. Images are not
mean-subtracted: the segmenters normalise with their BatchNorm, and inference feeds pixels / 255
alike. Flips move the mask with the pixels (the same draw for both); the panel's colour
distortions (augment.py's, on the whole batch) leave masks alone. Random draws come from a seed of
(seed, epoch, batch, rank), so a resumed run sees the same batches.
"""

from __future__ import annotations

import numpy as np
import torch

from trainyard.datasets.segmentation.store import SegmentationSplit
from trainyard.datasets.storage import SplitReader
from trainyard.training.augment import augment_batch
from trainyard.training.augment_settings import AugmentSettings
from trainyard.training.data import BatchLoader
from trainyard.training.detection.data import colour_only

FLIPS = {"lr": (-1,), "ud": (-2,), "both": (-1, -2)}  # the image's axes each flip setting may turn


class SegmentationBatchLoader(BatchLoader):
    """``batches(epoch, start)`` yields (images (N, C, H, W) float 0..1, masks (N, H, W) int64)."""

    def __init__(self, split: SegmentationSplit, batch_size: int, device: torch.device | str = "cpu", *,
                 train: bool = False, augment: AugmentSettings | None = None, seed: int = 0, rank: int = 0,
                 world_size: int = 1, prefetch: int = 3):
        super().__init__(SplitReader(split.folder), batch_size, device, train=train, augment=augment, seed=seed,
                         rank=rank, world_size=world_size, prefetch=prefetch)
        self.split = split

    def _read(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Background thread: one batch's uint8 images and masks, on the host."""
        return (torch.from_numpy(self.reader.read_batch(indices)),
                torch.from_numpy(self.split.mask_batch(indices)))

    def _to_device(self, images: torch.Tensor, labels: torch.Tensor, epoch: int, index: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        x = images.permute(0, 3, 1, 2).float().div_(255)  # (N, C, H, W) in 0..1
        masks = labels.long()
        if self.train and self.augment is not None:
            seed = int(np.random.SeedSequence([self.seed, epoch, index, self.rank]).generate_state(1)[0])
            generator = torch.Generator().manual_seed(seed)
            x, masks = flipped(x, masks, FLIPS.get(self.augment.flip, ()), generator)
            x = augment_batch(x, colour_only(self.augment), generator)
        return x.contiguous().to(self.device), masks.contiguous().to(self.device)


def flipped(x: torch.Tensor, masks: torch.Tensor, axes: tuple[int, ...], generator: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each image and its mask turned alike along each of ``axes`` with probability 1/2."""
    for axis in axes:
        turn = torch.rand(len(x), generator=generator) < 0.5
        if turn.any():
            x[turn] = x[turn].flip(axis)
            masks[turn] = masks[turn].flip(axis)
    return x, masks
