"""Classification metrics from labels and predictions, with numpy only.

The confusion matrix counts ``matrix[true, predicted]``. Per class: precision (of the images
predicted as the class, the share that are), recall (of the images of the class, the share
found; DIGITS's per-class accuracy), F1 and support. Classes never predicted have precision 0,
classes without images have recall 0 and are left out of the macro averages.
"""

from __future__ import annotations

import numpy as np


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, num_classes: int) -> np.ndarray:
    """(num_classes, num_classes) int64 counts, rows the true class, columns the prediction."""
    labels = np.asarray(labels, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    flat = labels * num_classes + predicted
    return np.bincount(flat, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


def top_k_correct(labels: np.ndarray, top: np.ndarray) -> np.ndarray:
    """(N, k) best-first predicted classes -> (k,) how many images had their label in the top j+1."""
    hits = np.asarray(top) == np.asarray(labels)[:, None]
    return np.cumsum(hits, axis=1).sum(axis=0)


def per_class(matrix: np.ndarray, classes: list[str]) -> list[dict]:
    """Precision, recall, F1 and support of each class, in label order."""
    matrix = np.asarray(matrix, dtype=np.float64)
    correct = np.diag(matrix)
    support = matrix.sum(axis=1)
    predicted = matrix.sum(axis=0)
    precision = np.divide(correct, predicted, out=np.zeros_like(correct), where=predicted > 0)
    recall = np.divide(correct, support, out=np.zeros_like(correct), where=support > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros_like(correct), where=both > 0)
    return [{"class": name, "precision": float(p), "recall": float(r), "f1": float(f),
             "support": int(s), "predicted": int(n)}
            for name, p, r, f, s, n in zip(classes, precision, recall, f1, support, predicted)]


def most_confused(matrix: np.ndarray, classes: list[str], limit: int = 10) -> list[dict]:
    """The largest off-diagonal cells: ``{true, predicted, count, share}``, biggest first.

    ``share`` is the fraction of the true class's images that went to the wrong class.
    """
    matrix = np.asarray(matrix)
    off = matrix.copy()
    np.fill_diagonal(off, 0)
    order = np.argsort(-off, axis=None, kind="stable")[:limit]
    support = matrix.sum(axis=1)
    pairs = []
    for flat in order:
        t, p = divmod(int(flat), matrix.shape[1])
        if off[t, p] == 0:
            break
        pairs.append({"true": classes[t], "predicted": classes[p], "true_index": t, "predicted_index": p,
                      "count": int(off[t, p]), "share": float(off[t, p] / support[t])})
    return pairs


def summary(matrix: np.ndarray, classes: list[str], top_correct: np.ndarray | None = None) -> dict:
    """Accuracy (top-1 and, given ``top_correct`` from `top_k_correct`, top-5), per class, pairs."""
    matrix = np.asarray(matrix)
    total = int(matrix.sum())
    rows = per_class(matrix, classes)
    present = [r for r in rows if r["support"] > 0]
    doc = {
        "images": total,
        "accuracy": float(np.trace(matrix) / total) if total else None,
        "top5_accuracy": None,
        "macro": {key: float(np.mean([r[key] for r in present])) if present else None
                  for key in ("precision", "recall", "f1")},
        "per_class": rows,
        "confusion": matrix.astype(int).tolist(),
        "most_confused": most_confused(matrix, classes),
    }
    if top_correct is not None and total:
        k = min(5, len(top_correct))
        doc["top5_accuracy"] = float(top_correct[k - 1] / total)
    return doc
