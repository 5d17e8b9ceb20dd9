"""Segmentation's figures from a confusion matrix, shared by validation (training) and evaluate
(inference): per-class IoU, mean IoU with and without class 0 (background), pixel accuracy.

A class that is neither in the truth nor predicted has no IoU (None) and is left out of the
means, as torchmetrics' JaccardIndex does with ``zero_division`` ignored. Numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IGNORE = 255  # a mask pixel of no class


def confusion_counts(truth: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    """(classes, classes) int64 pixel counts of (true, predicted), the ignored pixels left out."""
    keep = truth != IGNORE
    pairs = truth[keep].astype(np.int64) * classes + predicted[keep].astype(np.int64)
    return np.bincount(pairs, minlength=classes * classes).reshape(classes, classes)


@dataclass(frozen=True)
class IouFigures:
    per_class_iou: list[float | None]  # None: a class neither in the truth nor predicted
    miou: float
    miou_no_background: float
    pixel_accuracy: float


def iou_figures(matrix: np.ndarray) -> IouFigures:
    """The IoU figures of a confusion matrix (true class by row)."""
    m = np.asarray(matrix, np.float64)
    inter = np.diag(m)
    union = m.sum(0) + m.sum(1) - inter
    iou = [float(i / u) if u > 0 else None for i, u in zip(inter.tolist(), union.tolist(), strict=True)]
    seen = [v for v in iou if v is not None]
    foreground = [v for v in iou[1:] if v is not None]
    return IouFigures(iou, float(np.mean(seen)) if seen else 0.0,
                      float(np.mean(foreground)) if foreground else 0.0,
                      float(inter.sum() / m.sum()) if m.sum() > 0 else 0.0)
