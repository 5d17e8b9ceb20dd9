"""Evaluate a multi-label classifier on its dataset's validation or test split.

The stored images go through the validation preprocessing (as evaluate.py's), the scores are
the sigmoid of each logit, and each label is decided at the threshold the model's checkpoint
saved (tuned on the validation split during training; not tuned again here). The document
(``evaluation.json``) holds F1 micro and macro, mAP (macro), and per label its precision,
recall, F1, AP, positives and threshold (artifact/multilabel_metrics.py, torchmetrics inside).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainyard.core.jobproc import Aborted
from trainyard.datasets.storage import open_split
from trainyard.inference.classify import prepare_pixels, probabilities
from trainyard.inference.loader import InferenceError, LoadedModel

TASK = "multilabel"


def score_split(loaded: LoadedModel, dataset_dir: Path, split: str, *, batch_size: int = 64,
                progress: Callable[[int, int], None] = lambda d, t: None,
                should_stop: Callable[[], bool] = lambda: False) -> tuple[np.ndarray, np.ndarray]:
    """(targets (N, L) uint8, scores (N, L) float32) of a split."""
    try:
        reader = open_split(Path(dataset_dir), split)
    except FileNotFoundError:
        raise InferenceError(f"the dataset has no {split} split") from None
    n = len(reader)
    if n == 0:
        raise InferenceError(f"the {split} split of the dataset is empty")
    targets = np.asarray(reader.labels)
    if targets.ndim != 2 or targets.shape[1] != len(loaded.classes):
        raise InferenceError(f"the {split} split holds no multi-label targets of the model's "
                             f"{len(loaded.classes)} labels")
    scores = np.zeros(targets.shape, np.float32)
    for start in range(0, n, batch_size):
        if should_stop():
            raise Aborted()
        stop = min(n, start + batch_size)
        pixels = reader.read_batch(np.arange(start, stop))
        scores[start:stop] = probabilities(loaded, prepare_pixels(loaded, pixels).inputs)
        progress(stop, n)
    return targets, scores


def evaluate_multilabel_split(loaded: LoadedModel, dataset_dir: Path, split: str, **options: Any) -> dict:
    """The evaluation document of a split (see the module docstring)."""
    import torch

    from trainyard.artifact.multilabel_metrics import multilabel_metrics

    if loaded.thresholds is None:
        raise InferenceError("the model is not a multi-label classifier (its checkpoint has no thresholds)")
    targets, scores = score_split(loaded, dataset_dir, split, **options)
    thresholds = torch.as_tensor(loaded.thresholds)
    doc = multilabel_metrics(torch.from_numpy(scores), torch.from_numpy(targets), thresholds, loaded.classes)
    doc.update(task=TASK, split=split, epoch=loaded.epoch, images=len(targets), classes=loaded.classes,
               labels_per_image=round(float(targets.sum(axis=1).mean()), 3))
    return doc
