"""Classify images with a loaded model: the validation preprocessing, then the top-k classes.

`prepare` is artifact/inputs.py's `prepare_images` with the model's settings and constants: the
dataset's resize mode, the central crop, 0..1, the mean subtracted, as validation batches are
(to the bit); it also returns the cropped uint8 pixels for display. Everything here is numpy:
on a CPU the forward pass is ONNX Runtime's, and no torch is imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from PIL import Image

from trainyard.artifact import inputs
from trainyard.artifact.inputs import Prepared
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.images import ImageError
from trainyard.datasets.model_input import read_input
from trainyard.inference.loader import InferenceError, LoadedModel

__all__ = ["Prepared", "classify", "decode", "load_for", "prepare", "prepare_pixels"]

MAX_TOP = 100


def decode(data: bytes, loaded: LoadedModel) -> Image.Image | np.ndarray:
    """An uploaded file as a Pillow image in the model's channel mode, or for a 16-bit or
    N-channel model an array at its depth (datasets/model_input.py: a 16-bit file given to an
    8-bit model is scaled to 8 bits); InferenceError if unusable."""
    prep = loaded.preprocess
    try:
        return read_input(data, prep.channels, prep.depth)
    except ImageError as exc:
        raise InferenceError(f"not a usable image: {exc}") from None


def load_for(path: str | os.PathLike, prep: Preprocessing) -> Image.Image | np.ndarray:
    """A file as `decode` gives an upload: what the model with preprocessing ``prep`` reads;
    ImageError if unusable."""
    return read_input(path, prep.channels, prep.depth)


def prepare(loaded: LoadedModel, images: Sequence[Image.Image | np.ndarray]) -> Prepared:
    """Images -> network input, as validation prepared them."""
    return inputs.prepare_images(images, loaded.preprocess, loaded.mean, loaded.std)


def prepare_pixels(loaded: LoadedModel, batch: np.ndarray) -> Prepared:
    """Stored-size uint8 (N, H, W, C) images (a dataset split's) -> network input."""
    return inputs.prepare_pixels(batch, loaded.preprocess.crop, loaded.mean, loaded.std)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float32 (the largest score subtracted first: no overflow)."""
    shifted = logits.astype(np.float32) - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """Element-wise sigmoid in float32 (a multi-label model's score of each label)."""
    return (1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float32), -80, 80)))).astype(np.float32)


def probabilities(loaded: LoadedModel, prepared: np.ndarray) -> np.ndarray:
    """Class probabilities (N, classes) float32: softmax, or a multi-label model's sigmoid (it
    has thresholds); ONNX Runtime's forward pass on a CPU (see ort_runtime.py), PyTorch's on a
    GPU or where the export failed."""
    return (softmax if loaded.thresholds is None else sigmoid)(loaded.logits(prepared))


def over_thresholds(scores: np.ndarray, classes: list[str], thresholds: Sequence[float]) -> list[list[dict]]:
    """Per image the ``{label, score}`` of each label at or over its threshold, best first."""
    limits = np.asarray(thresholds, np.float32)[None]
    return [[{"label": classes[i], "score": round(float(row[i]), 6)}
             for i in sorted(np.flatnonzero(row >= limits[0]).tolist(), key=lambda i: -row[i])]
            for row in scores]


def top_k(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(classes (N, k), probabilities (N, k)) best first; ties go to the lower class index."""
    order = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(probs, order, axis=1)


def top_predictions(probs: np.ndarray, classes: list[str], top: int = 5) -> list[list[list]]:
    """Per image ``[[label, confidence], ...]``, best first, at most ``top`` (and all classes)."""
    indices, values = top_k(probs, max(1, min(top, len(classes))))
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
