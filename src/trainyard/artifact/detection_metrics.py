"""COCO mAP of a detector's boxes, by torchmetrics' MeanAveragePrecision (pycocotools inside).

Shared by validation during training and by evaluate: both hand over per-image predictions
(boxes xyxy, scores, class indices 0-based) and ground truth (boxes, class indices), as numpy
or tensors, and get COCO's mAP@0.5 (``map50``) and mAP@0.5:0.95 (``map``) in 0..1, with per-class
AP and the precision-recall curves when asked. Never synchronised over processes here: the
caller gathers every rank's images first, so the figures are over the whole split.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

Detections = dict  # {"boxes": (b, 4), "scores": (b,), "labels": (b,)}
Truth = dict  # {"boxes": (b, 4), "labels": (b,)}
RECALL_POINTS = 101  # COCO's recall thresholds 0, 0.01, ... 1


def _tensors(doc: dict, keys: Sequence[str]) -> dict[str, torch.Tensor]:
    out = {}
    for key in keys:
        value = torch.as_tensor(np.asarray(doc[key]))
        out[key] = value.reshape(-1, 4).float() if key == "boxes" else value.reshape(-1)
    out["labels"] = out["labels"].long()
    return out


def mean_average_precision(predictions: Sequence[Detections], truth: Sequence[Truth], *,
                           per_class: bool = False, curves: bool = False) -> dict:
    """{"map50", "map"} over the images (and "per_class_ap": {class index: AP@0.5:0.95},
    "per_class_ap50", and "pr_curves": {class index: precision at the 101 recall points, IoU 0.5})."""
    from torchmetrics.detection import MeanAveragePrecision

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools",
                                  class_metrics=per_class, extended_summary=curves, sync_on_compute=False)
    metric.warn_on_many_detections = False  # COCO counts each image's 100 best: so do we
    metric.update([_tensors(p, ("boxes", "scores", "labels")) for p in predictions],
                  [_tensors(t, ("boxes", "labels")) for t in truth])
    result = metric.compute()
    # -1 is COCO's "no ground truth at all": no box to find scores as 0, not as a negative AP
    out: dict[str, Any] = {"map50": max(0.0, float(result["map_50"])), "map": max(0.0, float(result["map"]))}
    if per_class or curves:
        classes = [int(c) for c in torch.as_tensor(result["classes"]).reshape(-1).tolist()]
        out["classes"] = classes
    if per_class:
        out["per_class_ap"] = _per_class(result["map_per_class"], out["classes"])
    if curves:
        # precision: (T iou thresholds, R recall points, K classes, A areas, M max-dets); IoU 0.5,
        # all areas, the largest max-detections setting (100)
        precision = torch.as_tensor(result["precision"])[0, :, :, 0, -1]
        out["per_class_ap50"] = {c: _ap(precision[:, k]) for k, c in enumerate(out["classes"])}
        out["pr_curves"] = {c: [max(0.0, float(v)) for v in precision[:, k]] for k, c in enumerate(out["classes"])}
    return out


def _per_class(values: torch.Tensor, classes: list[int]) -> dict[int, float]:
    values = torch.as_tensor(values).reshape(-1)
    return {c: max(0.0, float(v)) for c, v in zip(classes, values.tolist())}


def _ap(precision: torch.Tensor) -> float:
    valid = precision[precision > -1]
    return float(valid.mean()) if len(valid) else 0.0
