"""Segmentation's figures from a confusion matrix, shared by validation (training) and evaluate
(inference): per-class IoU, mean IoU with and without class 0 (background), pixel accuracy.

A class that is neither in the truth nor predicted has no IoU (None) and is left out of the
means, as torchmetrics' JaccardIndex does with ``zero_division`` ignored. Numpy only.
"""

from __future__ import annotations

import numpy as np

IGNORE = 255  # a mask pixel of no class


def confusion_counts(truth: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    """(classes, classes) int64 pixel counts of (true, predicted), the ignored pixels left out."""
    keep = truth != IGNORE
    pairs = truth[keep].astype(np.int64) * classes + predicted[keep].astype(np.int64)
    return np.bincount(pairs, minlength=classes * classes).reshape(classes, classes)


def iou_figures(matrix: np.ndarray) -> dict:
    """{per_class_iou: [float | None], miou, miou_no_background, pixel_accuracy} of a confusion matrix."""
    m = np.asarray(matrix, np.float64)
    inter = np.diag(m)
    union = m.sum(0) + m.sum(1) - inter
    iou = [float(i / u) if u > 0 else None for i, u in zip(inter.tolist(), union.tolist(), strict=True)]
    seen = [v for v in iou if v is not None]
    foreground = [v for v in iou[1:] if v is not None]
    return {"per_class_iou": iou, "miou": float(np.mean(seen)) if seen else 0.0,
            "miou_no_background": float(np.mean(foreground)) if foreground else 0.0,
            "pixel_accuracy": float(inter.sum() / m.sum()) if m.sum() > 0 else 0.0}
