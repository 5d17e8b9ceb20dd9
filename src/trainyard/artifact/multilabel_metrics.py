"""Figures of a multi-label classifier's scores, by torchmetrics, and its thresholds per label.

Shared by validation during training and by evaluate: both hand over the sigmoid scores (N, L)
and the multi-hot targets (N, L) of a whole split (the caller gathers every rank's first) and
get mAP (macro: the mean of the labels' average precision), F1 micro (over every image-label
pair) and macro (the mean of the labels' F1), and per label its precision, recall, F1, AP and
threshold. A label's threshold is the one of ``CANDIDATES`` with the best F1 on the split (the
closest to 0.5 among equals; 0.5 for a label with no positive image there), so a rare label
is not held to the threshold of a common one.
"""

from __future__ import annotations

from typing import Any

import torch

DEFAULT_THRESHOLD = 0.5
CANDIDATES = torch.linspace(0.02, 0.98, 49)  # 0.02 apart, 0.5 among them


def tune_thresholds(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(L,) the threshold of each label that maximises its F1 on these scores."""
    scores, targets = scores.float(), targets.bool()
    candidates = CANDIDATES.to(scores.device)
    # One candidate at a time: (T, L) counts, never a (T, N, L) mask (gigabytes on a large split).
    tp = torch.stack([((scores >= c) & targets).sum(0) for c in candidates]).float()
    fp = torch.stack([((scores >= c) & ~targets).sum(0) for c in candidates]).float()
    fn = targets.sum(0).float()[None] - tp
    f1 = 2 * tp / (2 * tp + fp + fn).clamp(min=1)
    # best F1, and among equals the candidate nearest 0.5 (a tiny penalty for the distance)
    ranked = f1 - 1e-6 * (candidates[:, None] - DEFAULT_THRESHOLD).abs()
    thresholds = candidates[ranked.argmax(0)]
    return torch.where(targets.any(0), thresholds, torch.full_like(thresholds, DEFAULT_THRESHOLD))


def multilabel_metrics(scores: torch.Tensor, targets: torch.Tensor, thresholds: torch.Tensor,
                       labels: list[str] | None = None) -> dict[str, Any]:
    """{"micro_f1", "macro_f1", "map"} in 0..1 (and "per_label" rows when ``labels`` are named)."""
    from torchmetrics.functional.classification import (
        multilabel_average_precision,
        multilabel_f1_score,
        multilabel_precision,
        multilabel_recall,
    )

    scores, targets = scores.float().cpu(), targets.long().cpu()
    n = targets.shape[1]
    predicted = (scores >= thresholds.cpu()[None]).long()  # ints: torchmetrics takes them as decisions
    args: dict[str, Any] = dict(num_labels=n, zero_division=0)
    out: dict[str, Any] = {
        "micro_f1": float(multilabel_f1_score(predicted, targets, average="micro", **args)),
        "macro_f1": float(multilabel_f1_score(predicted, targets, average="macro", **args)),
        "map": 0.0,
    }
    # AP once a label (torchmetrics), averaged over the labels with a positive image: undefined for the others
    ap_by_label = multilabel_average_precision(scores, targets, num_labels=n, average="none").nan_to_num(0.0)
    present = targets.any(0)
    if bool(present.any()):
        out["map"] = float(ap_by_label[present].mean())
    if labels is not None:
        per = {name: metric(predicted, targets, average="none", **args).tolist() for name, metric in
               (("precision", multilabel_precision), ("recall", multilabel_recall), ("f1", multilabel_f1_score))}
        ap = ap_by_label.tolist()
        support = targets.sum(0).tolist()
        out["per_label"] = [{"label": label, "precision": per["precision"][i], "recall": per["recall"][i],
                             "f1": per["f1"][i], "ap": ap[i], "support": int(support[i]),
                             "threshold": round(float(thresholds[i]), 4)} for i, label in enumerate(labels)]
    return out

