"""Evaluate a multi-label classifier on its dataset's validation or test split.

The stored images go through the validation preprocessing (as evaluate.py's), the scores are
the sigmoid of each logit, and each label is decided at the threshold the model's checkpoint
saved (tuned on the validation split during training; not tuned again here). The document
(``evaluation.json``) holds F1 micro and macro, mAP (macro), and per label its precision,
recall, F1, AP, positives and threshold (artifact/multilabel_metrics.py, torchmetrics inside).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trainyard.inference.evaluate import open_evaluated_split, split_probabilities
from trainyard.inference.loader import InferenceError, LoadedModel

TASK = "multilabel"


def score_split(loaded: LoadedModel, dataset_dir: Path, split: str, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """(targets (N, L) uint8, scores (N, L) float32) of a split; ``options`` are
    evaluate.split_probabilities's."""
    reader = open_evaluated_split(dataset_dir, split)
    targets = np.asarray(reader.labels)
    if targets.ndim != 2 or targets.shape[1] != len(loaded.classes):
        raise InferenceError(f"the {split} split holds no multi-label targets of the model's "
                             f"{len(loaded.classes)} labels")
    scores = np.zeros(targets.shape, np.float32)
    for rows, probs in split_probabilities(loaded, reader, **options):
        scores[rows] = probs
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
