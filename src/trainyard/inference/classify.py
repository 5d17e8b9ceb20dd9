"""Classify images with a loaded model: the validation preprocessing, then the top-k classes.

`prepare` is artifact/preprocess.py's `prepare_images` with the model's settings and cached mean:
the dataset's resize mode, then `normalize_batch` (central crop, 0..1, mean subtraction), the
very function validation batches go through; it also returns the cropped uint8 pixels for display.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from trainyard.artifact.preprocess import Prepared, prepare_images, resize_for_input
from trainyard.artifact.preprocess import prepare_pixels as _prepare_pixels
from trainyard.datasets.images import ImageError, load_image_bytes
from trainyard.inference.loader import InferenceError, LoadedModel

__all__ = ["Prepared", "classify", "decode", "prepare", "prepare_pixels", "resize_for"]

MAX_TOP = 100


def decode(data: bytes, loaded: LoadedModel) -> Image.Image:
    """An uploaded file as a Pillow image in the model's channel mode; InferenceError if unusable."""
    try:
        return load_image_bytes(data, loaded.preprocess["channels"])
    except ImageError as exc:
        raise InferenceError(f"not a usable image: {exc}") from None


def resize_for(loaded: LoadedModel, image: Image.Image) -> np.ndarray:
    """An image at the dataset's stored size, (H, W, C) uint8, resized as the dataset build did."""
    return resize_for_input(image, loaded.preprocess)


def prepare(loaded: LoadedModel, images: Sequence[Image.Image]) -> Prepared:
    """Images -> network input, as validation prepared them."""
    return prepare_images(images, loaded.preprocess, loaded.mean, loaded.device, loaded.std)


def prepare_pixels(loaded: LoadedModel, batch: torch.Tensor) -> Prepared:
    """Stored-size uint8 (N, H, W, C) images (a dataset split's) -> network input."""
    return _prepare_pixels(batch, loaded.preprocess.get("crop"), loaded.mean, loaded.device, loaded.std)


def logits_of(output) -> torch.Tensor:
    """The class scores of a forward pass (a network may return extra heads in a tuple)."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if not isinstance(output, torch.Tensor) or output.ndim != 2:
        raise InferenceError("the network's output is not an (N, classes) tensor of scores")
    return output


def probabilities(loaded: LoadedModel, inputs: torch.Tensor) -> torch.Tensor:
    """Softmax class probabilities (N, classes) on the CPU, float32: through ONNX Runtime for a
    CPU model (see ort_runtime.py), through PyTorch otherwise."""
    forward = loaded.cpu_forward() if inputs.device.type == "cpu" else None
    if forward is None:
        return torch_probabilities(loaded, inputs)
    with loaded.lock:
        logits = forward(inputs.numpy())
    return torch.softmax(torch.from_numpy(logits).float(), dim=1)


def torch_probabilities(loaded: LoadedModel, inputs: torch.Tensor) -> torch.Tensor:
    """`probabilities` by PyTorch's forward pass (GPU models, and the ONNX path's fallback)."""
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
