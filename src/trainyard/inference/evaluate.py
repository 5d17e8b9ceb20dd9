"""Evaluate a model on its dataset's validation or test split.

The stored images go through `prepare_pixels`, the same central crop and mean subtraction as
validation during training, so the accuracy here equals the one training reported for the same
checkpoint and split. The result (``evaluation.json``) holds top-1 and top-5 accuracy, per-class
precision, recall and F1, the confusion matrix and the most-confused class pairs, each with a
few example images: those wrongly predicted with the highest confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from trainyard.core.jobproc import Aborted
from trainyard.datasets.storage import SplitReader, open_split
from trainyard.inference import metrics
from trainyard.inference.classify import prepare_pixels, probabilities, top_k
from trainyard.inference.loader import InferenceError, LoadedModel

EXAMPLES = 6  # images shown per confused pair


def open_evaluated_split(dataset_dir: Path, split: str) -> SplitReader:
    """A split's reader, or InferenceError when the dataset has no such split or it is empty."""
    try:
        reader = open_split(Path(dataset_dir), split)
    except FileNotFoundError:
        raise InferenceError(f"the dataset has no {split} split") from None
    if len(reader) == 0:
        raise InferenceError(f"the {split} split of the dataset is empty")
    return reader


def split_probabilities(loaded: LoadedModel, reader: SplitReader, *, batch_size: int = 64,
                        progress: Callable[[int, int], None] = lambda d, t: None,
                        should_stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[slice, np.ndarray]]:
    """(rows, the model's probabilities for them) batch by batch over ``reader``'s images, in
    order; Aborted between batches when ``should_stop()``."""
    n = len(reader)
    for start in range(0, n, batch_size):
        if should_stop():
            raise Aborted()
        stop = min(n, start + batch_size)
        pixels = reader.read_batch(np.arange(start, stop))
        yield slice(start, stop), probabilities(loaded, prepare_pixels(loaded, pixels).inputs)
        progress(stop, n)


def predict_split(loaded: LoadedModel, dataset_dir: Path, split: str,
                  **options: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels (N,), top-k classes (N, k) best first, their probabilities (N, k)) of a split;
    ``options`` are `split_probabilities`'s."""
    reader = open_evaluated_split(dataset_dir, split)
    n, k = len(reader), min(5, len(loaded.classes))
    top = np.zeros((n, k), np.int64)
    conf = np.zeros((n, k), np.float32)
    for rows, probs in split_probabilities(loaded, reader, **options):
        top[rows], conf[rows] = top_k(probs, k)
    return np.asarray(reader.labels, dtype=np.int64), top, conf


def evaluation(labels: np.ndarray, top: np.ndarray, conf: np.ndarray, classes: list[str]) -> dict:
    """The evaluation document from `predict_split`'s arrays (see the module docstring)."""
    matrix = metrics.confusion_matrix(labels, top[:, 0], len(classes))
    doc = metrics.summary(matrix, classes, metrics.top_k_correct(labels, top))
    for pair in doc["most_confused"]:
        wrong = np.flatnonzero((labels == pair["true_index"]) & (top[:, 0] == pair["predicted_index"]))
        order = wrong[np.argsort(-conf[wrong, 0], kind="stable")][:EXAMPLES]
        pair["examples"] = [{"index": int(i), "confidence": float(conf[i, 0])} for i in order]
    doc["classes"] = classes
    return doc


def evaluate_split(loaded: LoadedModel, dataset_dir: Path, split: str, **options: Any) -> dict:
    """Run the model over a split and return its evaluation document."""
    labels, top, conf = predict_split(loaded, dataset_dir, split, **options)
    doc = evaluation(labels, top, conf, loaded.classes)
    doc.update(split=split, epoch=loaded.epoch)
    return doc
