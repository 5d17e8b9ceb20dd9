"""The one way images become network input: training, validation, classify and export share it.

Convention (stored in checkpoints as ``scale: "0..1"``): a uint8 image (H, W, C) becomes a float
(C, H, W) tensor in 0..1, is cropped to ``crop`` x ``crop`` (random in training, central
otherwise), augmented (training only, on 0..1 values), and then has the dataset mean, also in
0..1 units, subtracted: the mean image (centre-cropped like the images), its per-channel
average ("pixel") or nothing ("none"). A network fine-tuned from published weights also divides
by their per-channel ``std`` (its mean is then the weights' mean, stored as a constant image
with mean mode "pixel"), so its input is what the weights were trained on.

`normalize_batch` is the tensor part. The batch loader calls it for every batch (training
passes its random crop and augmentation in, training/augment.py) and `prepare_images` calls it
for images given at inference time, so classifying an image on the server gives exactly what
validation gave for the same image. `input_shape` and `mean_image` read a checkpoint's
``preprocess`` entry for export.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from trainyard.datasets.images import to_mode
from trainyard.datasets.resize import resize_image

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


def center_crop_batch(x: torch.Tensor, crop: int) -> torch.Tensor:
    """The central crop x crop window (Caffe's offsets: (size - crop) // 2), as a view, any dtype."""
    h, w = x.shape[-2:]
    check_crop(crop, h, w)
    top, left = (h - crop) // 2, (w - crop) // 2
    return x[..., top : top + crop, left : left + crop]


def check_crop(crop: int, h: int, w: int) -> None:
    if not 0 < crop <= min(h, w):
        raise ValueError(f"crop size {crop} must be between 1 and the image size {h}x{w}")


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
    random_crop: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    augment: Callable[[torch.Tensor], torch.Tensor] | None = None,
    channels_last: bool = False,
    std: torch.Tensor | None = None,
) -> torch.Tensor:
    """uint8 (N, H, W, C) images on their device -> float (N, C, h, w) network input.

    ``mean`` comes from `mean_tensor`. Validation and inference pass nothing else: the crop is
    central. Training passes ``random_crop`` (x, crop) -> window and ``augment`` (0..1 floats
    in and out), training/augment.py's `training_batch`.
    """
    x = images.permute(0, 3, 1, 2)  # a view: NCHW shape with channels-last strides
    if crop:
        # Crop the uint8 pixels first: fewer bytes to convert and augment.
        x = random_crop(x, crop) if random_crop is not None else center_crop_batch(x, crop)
    x = x.float().mul_(1.0 / 255.0)
    if augment is not None:
        x = augment(x)
    if mean is not None:
        x = x - mean
    if std is not None:  # from `std_tensor`
        x = x / std
    return x.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@dataclass
class Prepared:
    """A batch ready for the network, and what it looks like to a person."""

    inputs: torch.Tensor  # (N, C, h, w) float, mean subtracted, on the requested device
    pixels: np.ndarray  # (N, h, w, C) uint8: the resized and cropped images, before the mean


def input_mean(preprocess: dict, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """`mean_tensor` of a checkpoint's ``preprocess`` entry."""
    return mean_tensor(preprocess.get("mean"), preprocess.get("mean_mode", "none"), preprocess.get("crop"), device)


def input_std(preprocess: dict, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """`std_tensor` of a checkpoint's ``preprocess`` entry (None for most models)."""
    return std_tensor(preprocess.get("std"), device)


def resize_for_input(image: Image.Image, preprocess: dict) -> np.ndarray:
    """An image at the dataset's stored size, (H, W, C) uint8, converted and resized as the
    dataset build did (an image already at that size is used as is)."""
    # A fresh noise generator per image: an image gets the same input in any batch.
    return resize_image(to_mode(image, preprocess["channels"]), preprocess["width"], preprocess["height"],
                        preprocess["resize"], np.random.default_rng(INFERENCE_NOISE_SEED))


def prepare_images(images: Sequence[Image.Image], preprocess: dict, mean: torch.Tensor | None,
                   device: torch.device | str = "cpu", std: torch.Tensor | None = None) -> Prepared:
    """PIL images -> the network input a checkpoint expects, plus the pixels it shows.

    ``preprocess`` is a checkpoint's ``preprocess`` entry (width, height, channels, resize,
    mean_mode, crop, mean); ``mean`` is its `input_mean` (callers that keep a model loaded
    compute it once), ``std`` its `input_std`.
    """
    if preprocess.get("scale", SCALE) != SCALE:
        raise ValueError(f"unsupported input scale {preprocess.get('scale')!r}; expected {SCALE!r}")
    batch = torch.from_numpy(np.stack([resize_for_input(image, preprocess) for image in images]))
    return prepare_pixels(batch, preprocess.get("crop"), mean, device, std)


def prepare_pixels(batch: torch.Tensor, crop: int | None, mean: torch.Tensor | None,
                   device: torch.device | str = "cpu", std: torch.Tensor | None = None) -> Prepared:
    """Stored-size uint8 (N, H, W, C) images (resized ones, or a dataset split's) -> network input,
    through `normalize_batch` exactly as a validation batch goes."""
    inputs = normalize_batch(batch.to(device), mean, crop, std=std)
    shown = batch.permute(0, 3, 1, 2)
    if crop:
        shown = center_crop_batch(shown, crop)
    return Prepared(inputs, shown.permute(0, 2, 3, 1).contiguous().numpy())


def preprocess_images(
    images: Sequence[Image.Image], preprocess: dict, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """PIL images -> the (N, C, h, w) float batch a checkpoint's network expects."""
    return prepare_images(images, preprocess, input_mean(preprocess, device), device,
                          input_std(preprocess, device)).inputs


def input_shape(preprocess: dict) -> tuple[int, int, int]:
    """(C, h, w) of the network input: the crop, else the stored image size."""
    crop = preprocess.get("crop")
    return (preprocess["channels"], crop or preprocess["height"], crop or preprocess["width"])


def mean_image(preprocess: dict) -> np.ndarray:
    """The mean image (H, W, C) float32 in 0..255; zeros when the model subtracts none."""
    mean = preprocess.get("mean")
    if mean is None:
        return np.zeros((preprocess["height"], preprocess["width"], preprocess["channels"]), np.float32)
    return np.asarray(mean.cpu().numpy() if isinstance(mean, torch.Tensor) else mean, dtype=np.float32)
