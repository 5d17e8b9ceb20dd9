"""Segmentation's inference jobs: segment-many (classify-many's job kind, for a segmentation model)
and evaluate (mean IoU and per-class IoU on a dataset split).

Segment-many writes each image's index-PNG mask to the job's ``masks/`` folder, named by the row
(two images may share a stem), and one results.csv row per image: ``row, image, mask, areas,
error`` (``areas``: JSON {class: share of the image's pixels}).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from trainyard.artifact.segmentation_metrics import confusion_counts, iou_figures
from trainyard.core.files import write_json_atomic
from trainyard.datasets.images import ImageError
from trainyard.datasets.segmentation.store import SegmentationSplit
from trainyard.inference.many import ResultRows
from trainyard.inference.results import SUMMARY
from trainyard.inference.segmentation.segmenter import TASK, LoadedSegmenter, areas, save_mask
from trainyard.inference.sources import Item

HEADER = ["row", "image", "mask", "areas", "error"]
MASKS_DIR = "masks"


def segment_many(loaded: LoadedSegmenter, items: Iterable[Item], job_dir: Path, *, total: int,
                 progress: Callable[[int, int], None] = lambda d, t: None,
                 should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Segment ``items`` (files), writing masks and results.csv; return and write the summary."""
    (job_dir / MASKS_DIR).mkdir(exist_ok=True)
    done = errors = 0
    with ResultRows(job_dir, HEADER) as out:
        for item in items:
            if should_stop():
                break
            out.append([_row(loaded, item, done, job_dir)])
            errors += item.path is None or not (job_dir / MASKS_DIR / f"{done}.png").is_file()
            done += 1
            progress(done, total)
    summary = {"task": TASK, "images": done, "segmented": done - errors, "errors": errors,
               "classes": loaded.classes, "top_n": []}
    write_json_atomic(job_dir / SUMMARY, summary)
    return summary


def _row(loaded: LoadedSegmenter, item: Item, row: int, job_dir: Path) -> list:
    if item.path is None:
        return [row, item.name, "", "", "a stored split image: segment files"]
    try:
        mask = loaded.mask(item.path)
    except ImageError as exc:
        return [row, item.name, "", "", str(exc)]
    name = f"{MASKS_DIR}/{row}.png"
    save_mask(mask, job_dir / name)
    return [row, item.name, name, json.dumps(areas(mask, loaded.classes)), ""]


def evaluate_split(loaded: LoadedSegmenter, dataset_dir: Path, split: str, batch_size: int = 16,
                   progress: Callable[[int, int], None] = lambda d, t: None,
                   should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Mean IoU (with and without background), per-class IoU, pixel accuracy and the confusion
    matrix (pixels, true class by row) of ``loaded`` on a stored split."""
    stored = SegmentationSplit(dataset_dir / split)
    classes = len(loaded.classes)
    matrix = np.zeros((classes, classes), np.int64)
    for start in range(0, len(stored), batch_size):
        if should_stop():
            break
        idx = np.arange(start, min(start + batch_size, len(stored)))
        matrix += confusion_counts(stored.mask_batch(idx), loaded.logits(stored.images(idx)), classes)
        progress(int(idx[-1]) + 1, len(stored))
    figures = iou_figures(matrix)
    per_class = [{"class": name, "iou": iou, "pixels": int(matrix[i].sum())}
                 for i, (name, iou) in enumerate(zip(loaded.classes, figures.per_class_iou, strict=True))]
    return {"task": TASK, "split": split, "images": len(stored), "miou": figures.miou,
            "miou_no_background": figures.miou_no_background, "pixel_accuracy": figures.pixel_accuracy,
            "per_class": per_class, "confusion": matrix.tolist(), "classes": loaded.classes}
