"""Images given at inference time become network input here, in numpy: no torch needed.

The same arithmetic as `preprocess.normalize_batch` without a random crop or augmentation,
which is how validation prepares its batches: resize as the dataset build did, the central crop
(Caffe's offsets), 0..1, the mean subtracted, the pretrained weights' std divided. Each step is
the same float32 operation in the same order, so the result equals validation's bit for bit
(tests/inference/test_ort_runtime.py checks it). Working in numpy lets a process that only
classifies through ONNX Runtime (a classify-many job, the CLI, the server) run without
importing torch at all.

``mean`` and ``std`` are a checkpoint's constants in network layout: (1, C, h, w) or
(1, C, 1, 1) float32 in 0..1 units (`preprocess.input_arrays` makes them from a checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from PIL import Image

from trainyard.artifact.preprocessing import SCALE, Preprocessing
from trainyard.datasets.deep import resize_array
from trainyard.datasets.images import to_mode
from trainyard.datasets.preview import display_pixels
from trainyard.datasets.resize import resize_image

__all__ = ["INFERENCE_NOISE_SEED", "Prepared", "center_window", "prepare_images",
           "prepare_pixels", "resize_for_input"]

# Noise seed for fill/half_crop padding at inference, so an image always classifies the same.
INFERENCE_NOISE_SEED = 0
# What torch multiplies by for ``mul_(1.0 / 255.0)`` (``/ 65535.0`` at 16 bits) on float32.
_TO_UNIT = {np.dtype(np.uint8): np.float32(1.0 / 255.0), np.dtype(np.uint16): np.float32(1.0 / 65535.0)}


@dataclass
class Prepared:
    """A batch ready for the network, and what it looks like to a person."""

    inputs: np.ndarray  # (N, C, h, w) float32, mean subtracted
    stored: np.ndarray  # (N, h, w, C) in the dataset's dtype: resized and cropped, before the mean

    @cached_property
    def pixels(self) -> np.ndarray:
        """(N, h, w, C) uint8, what the images look like: a 16-bit image as its min/max window,
        an N-channel one by its first channel (datasets/preview.py). Made when a page asks (a
        layer view, saliency), never for every batch of an evaluation."""
        if self.stored.dtype == np.uint8 and self.stored.shape[3] in (1, 3):
            return self.stored
        return np.stack([display_pixels(image) for image in self.stored])


def check_crop(crop: int, h: int, w: int) -> None:
    if not 0 < crop <= min(h, w):
        raise ValueError(f"crop size {crop} must be between 1 and the image size {h}x{w}")


def center_window(h: int, w: int, crop: int) -> tuple[slice, slice]:
    """The rows and columns of the central crop x crop window: (size - crop) // 2, as Caffe."""
    check_crop(crop, h, w)
    top, left = (h - crop) // 2, (w - crop) // 2
    return slice(top, top + crop), slice(left, left + crop)


def resize_for_input(image: Image.Image | np.ndarray, prep: Preprocessing) -> np.ndarray:
    """An image at the dataset's stored size, (H, W, C) uint8, converted and resized as the
    dataset build did (an image already at that size is used as is). A full-depth model's
    image is an (H, W, C) array of its dtype (datasets/deep.py's `load_array`), resized so."""
    # A fresh noise generator per image: an image gets the same input in any batch.
    rng = np.random.default_rng(INFERENCE_NOISE_SEED)
    if isinstance(image, np.ndarray):
        return resize_array(image, prep.width, prep.height, prep.resize, rng)
    return resize_image(to_mode(image, prep.channels), prep.width, prep.height, prep.resize, rng)


def prepare_pixels(batch: np.ndarray, crop: int | None, mean: np.ndarray | None,
                   std: np.ndarray | None = None) -> Prepared:
    """Stored-size uint8 (N, H, W, C) images (resized ones, or a dataset split's) -> network input."""
    if crop:
        rows, cols = center_window(batch.shape[1], batch.shape[2], crop)
        batch = batch[:, rows, cols, :]
    x = batch.transpose(0, 3, 1, 2).astype(np.float32) * _TO_UNIT[batch.dtype]
    if mean is not None:
        x -= mean
    if std is not None:
        x /= std
    return Prepared(np.ascontiguousarray(x), np.ascontiguousarray(batch))


def prepare_images(images: Sequence[Image.Image | np.ndarray], prep: Preprocessing, mean: np.ndarray | None,
                   std: np.ndarray | None = None) -> Prepared:
    """PIL images -> the network input a checkpoint expects, plus the pixels it shows.

    ``prep`` is a checkpoint's preprocessing;
    ``mean`` and ``std`` its constants (see the module docstring).
    """
    if prep.scale != SCALE:
        raise ValueError(f"unsupported input scale {prep.scale!r}; expected {SCALE!r}")
    batch = np.stack([resize_for_input(image, prep) for image in images])
    return prepare_pixels(batch, prep.crop, mean, std)
