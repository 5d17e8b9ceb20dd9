"""Evaluate a detector on a stored split: COCO mAP, per-class AP, precision-recall curves, misses.

mAP@0.5 and mAP@0.5:0.95, each class's AP (at 0.5 and over 0.5:0.95) and its precision at COCO's
101 recall points (IoU 0.5) come from torchmetrics' COCO evaluation (artifact/detection_metrics.py).
The images with the worst misses are found here: a ground-truth box is missed when no box of
its class scoring at least ``MISS_SCORE`` overlaps it by IoU 0.5 (each box matches once, best
score first); images are ranked by missed boxes, then by boxes found where there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from trainyard.artifact.detection_metrics import mean_average_precision
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.inference.detection.detector import LoadedDetector

MISS_SCORE = 0.5
MISS_IOU = 0.5
WORST = 12


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)) IoU of xyxy boxes."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area = lambda x: np.prod(np.clip(x[:, 2:] - x[:, :2], 0, None), axis=1)  # noqa: E731
    return inter / np.maximum(area(a)[:, None] + area(b)[None, :] - inter, 1e-9)


def misses(found: dict, boxes: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    """(ground-truth boxes missed, confident boxes that match nothing) of one image."""
    keep = found["scores"] >= MISS_SCORE
    pred, pred_labels = found["boxes"][keep], found["labels"][keep]
    order = np.argsort(-found["scores"][keep], kind="stable")
    matched = np.zeros(len(boxes), bool)
    overlaps = iou(pred, boxes) if len(pred) and len(boxes) else np.zeros((len(pred), len(boxes)))
    false = 0
    for p in order:
        candidates = (~matched) & (labels == pred_labels[p]) & (overlaps[p] >= MISS_IOU) if len(boxes) else []
        if np.any(candidates):
            matched[int(np.argmax(np.where(candidates, overlaps[p], -1)))] = True
        else:
            false += 1
    return int((~matched).sum()), false


def evaluate_split(loaded: LoadedDetector, dataset_dir: Path, split: str, *, batch_size: int = 16,
                   progress: Callable[[int, int], None] = lambda done, total: None,
                   should_stop: Callable[[], bool] = lambda: False) -> dict:
    """The evaluation document of ``split`` (evaluation.json of an evaluate job)."""
    data = DetectionSplit(Path(dataset_dir) / split)
    predictions, truth, worst = [], [], []
    n = len(data)
    for start in range(0, n, batch_size):
        if should_stop():
            from trainyard.core.jobproc import Aborted

            raise Aborted()
        indices = np.arange(start, min(n, start + batch_size))
        for i, found in zip(indices, loaded.boxes(data.images(indices))):
            boxes, labels = data.targets(int(i))
            predictions.append(found)
            truth.append({"boxes": boxes, "labels": labels})
            missed, false = misses(found, boxes, labels)
            worst.append({"index": int(i), "boxes": len(boxes), "missed": missed, "false_positives": false})
        progress(min(n, start + batch_size), n)
    scores = mean_average_precision(predictions, truth, per_class=True, curves=True)
    classes = loaded.classes
    per_class = [{"class": classes[c] if 0 <= c < len(classes) else str(c),
                  "ap": scores["per_class_ap"].get(c, 0.0), "ap50": scores["per_class_ap50"].get(c, 0.0),
                  "boxes": int(sum((t["labels"] == c).sum() for t in truth))}
                 for c in scores.get("classes", [])]
    worst.sort(key=lambda row: (-row["missed"], -row["false_positives"], row["index"]))
    return {"task": "detection", "split": split, "images": n, "map50": scores["map50"], "map": scores["map"],
            "per_class": per_class,
            "pr_curves": {classes[c] if 0 <= c < len(classes) else str(c): curve
                          for c, curve in scores["pr_curves"].items()},
            "worst": [row for row in worst[:WORST] if row["missed"] or row["false_positives"]],
            "miss_score": MISS_SCORE}
