"""The one way images become network input, shared by training, validation and inference.

Convention (stored in checkpoints as ``scale: "0..1"``): a uint8 image (H, W, C) becomes a float
(C, H, W) tensor in 0..1, is cropped to ``crop`` x ``crop`` (random in training, central
otherwise), augmented (training only, on 0..1 values), and then has the dataset mean, also in
0..1 units, subtracted: the mean image (centre-cropped like the images), its per-channel
average ("pixel") or nothing ("none"). A network fine-tuned from published weights also divides
by their per-channel ``std`` (then the mean is the weights' mean, stored as a constant image
with mean mode "pixel"), so its input is what the weights were trained on.

`normalize_batch` is the tensor part. The batch loader calls it for every batch and
`preprocess_images` calls it for images given at inference time, so classifying an image on the
server gives exactly what validation gave for the same image.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from PIL import Image

from trainyard.datasets.images import to_mode
from trainyard.datasets.resize import resize_image
from trainyard.training.augment import (
    AugmentSettings,
    augment_batch,
    center_crop_batch,
    is_identity,
    random_crop_batch,
)

MEAN_MODES = ("image", "pixel", "none")
SCALE = "0..1"
# Noise seed for fill/half_crop padding at inference, so an image always classifies the same.
INFERENCE_NOISE_SEED = 0


def mean_tensor(
    mean_hwc: np.ndarray | torch.Tensor | None, mode: str, crop: int | None, device: torch.device | str = "cpu"
) -> torch.Tensor | None:
    """The mean to subtract, in 0..1 units: (1, C, h, w) for "image", (1, C, 1, 1) for "pixel".

    ``mean_hwc`` is the train mean image (H, W, C) in 0..255 (mean.npy). With a crop the mean
    image is centre-cropped: the same window validation uses.
    """
    if mode not in MEAN_MODES:
        raise ValueError(f"unknown mean mode {mode!r}; valid: {', '.join(MEAN_MODES)}")
    if mode == "none" or mean_hwc is None:
        return None
    mean = torch.as_tensor(np.asarray(mean_hwc, dtype=np.float32)).permute(2, 0, 1)[None]  # 1,C,H,W
    if mode == "pixel":
        mean = mean.mean(dim=(2, 3), keepdim=True)
    elif crop:
        mean = center_crop_batch(mean, crop)
    return (mean / 255.0).contiguous().to(device)


def std_tensor(std: Sequence[float] | None, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """The per-channel std to divide by, (1, C, 1, 1), or None when the input is not scaled."""
    if not std:
        return None
    return torch.tensor([float(s) for s in std], dtype=torch.float32, device=device).view(1, -1, 1, 1)


def normalize_batch(
    images: torch.Tensor,
    mean: torch.Tensor | None,
    crop: int | None,
    *,
    train: bool = False,
    augment: AugmentSettings | None = None,
    generator: torch.Generator | None = None,
    channels_last: bool = False,
    std: torch.Tensor | None = None,
) -> torch.Tensor:
    """uint8 (N, H, W, C) images on their device -> float (N, C, h, w) network input.

    ``mean`` comes from `mean_tensor`. In training (``train=True``) the crop is random and
    ``augment`` is applied, drawing from ``generator``; otherwise the crop is central.
    """
    x = images.permute(0, 3, 1, 2)  # a view: NCHW shape with channels-last strides
    if crop:
        # Crop the uint8 pixels first: fewer bytes to convert and augment.
        x = random_crop_batch(x, crop, generator) if train else center_crop_batch(x, crop)
    x = x.float().mul_(1.0 / 255.0)
    if train and augment is not None and not is_identity(augment):
        x = augment_batch(x, augment, generator)
    if mean is not None:
        x = x - mean
    if std is not None:  # from `std_tensor`
        x = x / std
    return x.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


def preprocess_images(
    images: Sequence[Image.Image], preprocess: dict, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """PIL images -> the (N, C, h, w) float batch a checkpoint's network expects.

    ``preprocess`` is a checkpoint's ``preprocess`` entry (width, height, channels, resize,
    mean_mode, crop, mean). Images are converted like the dataset build did (mode, then the
    dataset's resize mode; an image already at the dataset size is used as is), then go through
    `normalize_batch` exactly as a validation batch does.
    """
    if preprocess.get("scale", SCALE) != SCALE:
        raise ValueError(f"unsupported input scale {preprocess.get('scale')!r}; expected {SCALE!r}")
    width, height, channels = preprocess["width"], preprocess["height"], preprocess["channels"]
    # A fresh noise generator per image: an image gets the same input in any batch.
    arrays = [
        resize_image(to_mode(image, channels), width, height, preprocess["resize"],
                     np.random.default_rng(INFERENCE_NOISE_SEED))
        for image in images
    ]
    batch = torch.from_numpy(np.stack(arrays)).to(device)  # N, H, W, C uint8
    crop = preprocess.get("crop")
    mean = mean_tensor(preprocess.get("mean"), preprocess.get("mean_mode", "none"), crop, device)
    return normalize_batch(batch, mean, crop, train=False, std=std_tensor(preprocess.get("std"), device))
