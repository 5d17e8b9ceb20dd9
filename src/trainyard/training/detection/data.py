"""Batches of a stored detection split: images as a (N, 3, H, W) 0..1 tensor, boxes as targets.

`DetectionBatchLoader` is a `BatchLoaderBase`, as classification's `BatchLoader` is (order,
sharding over ranks, read-ahead, exact resume: all of it), with a batch's labels torchvision's
target dicts, one per image: ``{"boxes": (b, 4) float32 xyxy in stored pixels, "labels": (b,)
int64}``, labels being the dataset's class plus the model's ``label_offset`` (1 where label 0 is
background).

Images are not mean-subtracted: torchvision's detectors normalise inside (their transform), and
a 1-channel split is repeated to 3 channels, as their ImageNet mean and std expect.

Augmentation moves the boxes with the pixels: torchvision.transforms.v2 on each image with its
``tv_tensors.BoundingBoxes`` (flip; scale jitter as a zoom by 1 ± s with a random shift of up
to s/2 of a side, the image size kept: zoomed in, that is a random crop of the image resized
back, the window always inside it; zoomed out, the image lands anywhere on the canvas), then
boxes left with (almost) no area are dropped. Before it, mosaic (mosaic.py) where asked, and
after it the panel's colour distortions (HSV, contrast, noise: augment.py's, on the whole batch),
which leave boxes alone. Its random draws come from a seed made of (seed, epoch, batch, rank),
so a resumed run sees the same batches.
"""

from __future__ import annotations

import numpy as np
import torch

from trainyard.datasets.detection.store import DetectionSplit
from trainyard.datasets.storage import SplitReader
from trainyard.training.augment import augment_batch
from trainyard.training.augment_settings import AugmentSettings
from trainyard.training.data import BatchLoaderBase
from trainyard.training.detection.mosaic import mosaic_batch

Targets = list[dict[str, torch.Tensor]]
MIN_BOX_SIDE = 1.0  # stored pixels: a box cropped thinner than this by augmentation is dropped


class DetectionBatchLoader(BatchLoaderBase[Targets, Targets]):
    """``batches(epoch, start)`` yields (images (N, 3, H, W) float 0..1, targets) on ``device``."""

    def __init__(self, split: DetectionSplit, batch_size: int, device: torch.device | str = "cpu", *,
                 label_offset: int = 1, train: bool = False, augment: AugmentSettings | None = None,
                 seed: int = 0, rank: int = 0, world_size: int = 1, prefetch: int = 3, epochs: float = 0):
        super().__init__(SplitReader(split.folder), batch_size, device, train=train, augment=augment, seed=seed,
                         rank=rank, world_size=world_size, prefetch=prefetch)
        self.split = split
        self.label_offset = label_offset
        self.epochs = epochs  # the run's length: mosaic stops for its last mosaic_off_percent
        self._transform = _augmentation(augment) if train and augment is not None else None

    def _read(self, indices: np.ndarray) -> tuple[torch.Tensor, Targets]:
        """Background thread: one batch's uint8 images and its boxes, on the host."""
        images = torch.from_numpy(self.reader.read_batch(indices))
        targets = []
        for i in indices:
            boxes, labels = self.split.targets(int(i))
            targets.append({"boxes": torch.from_numpy(boxes).reshape(-1, 4),
                            "labels": torch.from_numpy(labels) + self.label_offset})
        return images, targets

    def _to_device(self, images: torch.Tensor, labels: Targets, epoch: int, index: int
                   ) -> tuple[torch.Tensor, Targets]:
        x = images.permute(0, 3, 1, 2).float().div_(255)  # (N, C, H, W) in 0..1
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1).contiguous()
        targets = labels
        if self.train and self.augment is not None:
            seed = int(np.random.SeedSequence([self.seed, epoch, index, self.rank]).generate_state(1)[0])
            generator = torch.Generator().manual_seed(seed)
            if self.augment.mosaic and epoch < self.epochs * (1 - self.augment.mosaic_off_percent / 100):
                x, targets = mosaic_batch(x, targets, self.augment.mosaic, generator)
            if self._transform is not None:
                x, targets = _augmented(self._transform, x, targets, seed)
            x = augment_batch(x, colour_only(self.augment), generator)
        return x.to(self.device), [{k: v.to(self.device) for k, v in t.items()} for t in targets]


def colour_only(settings: AugmentSettings) -> AugmentSettings:
    """The panel's distortions that leave boxes where they are (HSV, contrast, noise)."""
    return AugmentSettings(hue_shift=settings.hue_shift, saturation_shift=settings.saturation_shift,
                           value_shift=settings.value_shift, contrast=settings.contrast,
                           noise_std=settings.noise_std)


def _augmentation(settings: AugmentSettings):
    """The v2 transform of the augmentation panel's settings that apply to boxes, or None."""
    from torchvision.transforms import v2

    steps: list = []
    if settings.flip in ("lr", "both"):
        steps.append(v2.RandomHorizontalFlip())
    if settings.flip in ("ud", "both"):
        steps.append(v2.RandomVerticalFlip())
    if settings.scale_jitter or settings.rotate_degrees:
        s = settings.scale_jitter
        # A zoom by z = 1 + s shows a window 1/z of a side wide: shifted by up to (z - 1)/2 of a
        # side, it is a random crop anywhere in the image (and shapes near the edges get cut).
        steps.append(v2.RandomAffine(degrees=settings.rotate_degrees, scale=(1 - s, 1 + s),
                                     translate=(s / 2, s / 2) if s else None))
    if not steps:
        return None
    return v2.Compose([*steps, v2.ClampBoundingBoxes()])


def _augmented(transform, x: torch.Tensor, targets: Targets, seed: int) -> tuple[torch.Tensor, Targets]:
    from torchvision import tv_tensors

    height, width = x.shape[-2:]
    out_images, out_targets = [], []
    with torch.random.fork_rng(devices=[]):  # the run's own RNG stream stays untouched
        torch.manual_seed(seed)
        for image, target in zip(x, targets):
            boxes = tv_tensors.BoundingBoxes(target["boxes"], format="XYXY", canvas_size=(height, width))
            image, boxes = transform(tv_tensors.Image(image), boxes)
            boxes = boxes.as_subclass(torch.Tensor)
            keep = ((boxes[:, 2] - boxes[:, 0]) >= MIN_BOX_SIDE) & ((boxes[:, 3] - boxes[:, 1]) >= MIN_BOX_SIDE)
            out_images.append(image.as_subclass(torch.Tensor))
            out_targets.append({"boxes": boxes[keep], "labels": target["labels"][keep]})
    return torch.stack(out_images), out_targets
