"""Classify images with a loaded model: the validation preprocessing, then the top-k classes.

`prepare` turns Pillow images into the network's input exactly as `preprocess_images` does
(the dataset's resize mode, then `normalize_batch`: central crop, 0..1, mean subtraction), and
also returns the resized, cropped uint8 pixels for display. A test keeps the two identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from PIL import Image

from trainyard.datasets.images import ImageError, load_image_bytes, to_mode
from trainyard.datasets.resize import resize_image
from trainyard.inference.loader import InferenceError, LoadedModel
from trainyard.training.augment import center_crop_batch
from trainyard.training.preprocess import INFERENCE_NOISE_SEED, normalize_batch

MAX_TOP = 100


@dataclass
class Prepared:
    """A batch ready for the network, and what it looks like to a person."""

    inputs: torch.Tensor  # (N, C, h, w) float, mean subtracted, on the model's device
    pixels: np.ndarray  # (N, h, w, C) uint8: the resized and cropped images, before the mean


def decode(data: bytes, loaded: LoadedModel) -> Image.Image:
    """An uploaded file as a Pillow image in the model's channel mode; InferenceError if unusable."""
    try:
        return load_image_bytes(data, loaded.preprocess["channels"])
    except ImageError as exc:
        raise InferenceError(f"not a usable image: {exc}") from None


def resize_for(loaded: LoadedModel, image: Image.Image) -> np.ndarray:
    """An image at the dataset's stored size, (H, W, C) uint8, resized as the dataset build did."""
    p = loaded.preprocess
    return resize_image(to_mode(image, p["channels"]), p["width"], p["height"], p["resize"],
                        np.random.default_rng(INFERENCE_NOISE_SEED))  # fixed noise: same input every time


def prepare(loaded: LoadedModel, images: Sequence[Image.Image]) -> Prepared:
    """Images -> network input, as validation prepared them (see training/preprocess.py)."""
    batch = torch.from_numpy(np.stack([resize_for(loaded, image) for image in images]))  # N,H,W,C
    return prepare_pixels(loaded, batch)


def prepare_pixels(loaded: LoadedModel, batch: torch.Tensor) -> Prepared:
    """Stored-size uint8 (N, H, W, C) images (a dataset split's) -> network input."""
    crop = loaded.preprocess.get("crop")
    inputs = normalize_batch(batch.to(loaded.device), loaded.mean, crop, train=False, std=loaded.std)
    shown = center_crop_batch(batch.permute(0, 3, 1, 2), crop) if crop else batch.permute(0, 3, 1, 2)
    return Prepared(inputs, shown.permute(0, 2, 3, 1).contiguous().numpy())


def logits_of(output) -> torch.Tensor:
    """The class scores of a forward pass (a network may return extra heads in a tuple)."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if not isinstance(output, torch.Tensor) or output.ndim != 2:
        raise InferenceError("the network's output is not an (N, classes) tensor of scores")
    return output


def probabilities(loaded: LoadedModel, inputs: torch.Tensor) -> torch.Tensor:
    """Softmax class probabilities (N, classes) on the CPU, float32."""
    with loaded.lock, torch.inference_mode():
        logits = logits_of(loaded.model(inputs))
    return torch.softmax(logits.float(), dim=1).cpu()


def top_predictions(probs: torch.Tensor, classes: list[str], top: int = 5) -> list[list[list]]:
    """Per image ``[[label, confidence], ...]``, best first, at most ``top`` (and all classes)."""
    k = max(1, min(top, len(classes)))
    values, indices = probs.topk(k, dim=1)
    return [[[classes[i], round(float(v), 6)] for v, i in zip(vs.tolist(), ix.tolist())]
            for vs, ix in zip(values, indices)]


def classify(loaded: LoadedModel, images: Sequence[Image.Image], top: int = 5,
             batch_size: int = 64) -> list[list[list]]:
    """Top-``top`` predictions of each image, in batches of ``batch_size``."""
    if not 1 <= top <= MAX_TOP:
        raise InferenceError(f"top must be between 1 and {MAX_TOP}, not {top}")
    results = []
    for start in range(0, len(images), batch_size):
        prepared = prepare(loaded, images[start:start + batch_size])
        results += top_predictions(probabilities(loaded, prepared.inputs), loaded.classes, top)
    return results
