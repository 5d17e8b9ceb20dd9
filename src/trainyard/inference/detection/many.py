"""Detect many images as a job (classify-many's job kind, for a detection model): a folder, a
list file or an unpacked archive, streamed in batches, so memory stays flat for any count.

Images come through classify-many's feed (inference/many.py ``image_batches``: paths checked
against the data roots, decoded and fitted a window ahead by the dataset build's pipeline, here
with the detector's pad or squash); each image's fit is planned from its header
(datasets/detection/sizes.py, as the build does) so boxes go back to its own pixels. Rows go to
results.csv through the same ``ResultRows``: ``row, image, box_count, boxes, error``, ``boxes``
the image's ``[{"label", "score", "box"}]`` as JSON (detect.py's shape, best first). Only the
per-class box counts stay in memory; summary.json has them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from trainyard.core.files import write_json_atomic
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.detection.geometry import Fit, plan_fit
from trainyard.datasets.detection.sizes import image_size
from trainyard.datasets.images import ImageError
from trainyard.inference.detection.detect import detect_fitted
from trainyard.inference.detection.detector import LoadedDetector
from trainyard.inference.many import ResultRows, image_batches
from trainyard.inference.results import SUMMARY
from trainyard.inference.sources import Item

HEADER = ["row", "image", "box_count", "boxes", "error"]


def fit_mode(loaded: LoadedDetector) -> str:
    resize = loaded.preprocess.resize
    return resize if resize in ("pad", "squash") else "pad"


def detect_many(loaded: LoadedDetector, items: Iterable[Item], job_dir: Path, *, total: int, threshold: float,
                batch_size: int = 64, roots: Sequence[str] = (),
                progress: Callable[[int, int], None] = lambda d, t: None,
                should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Detect in ``items`` (``total`` of them), writing results.csv; return and write the summary."""
    p = loaded.preprocess
    geometry = Geometry(p.width, p.height, p.channels, fit_mode(loaded), encoding="none")
    per_class: Counter[str] = Counter()
    done = errors = with_boxes = 0
    with ResultRows(job_dir, HEADER) as out:
        for batch in image_batches(geometry, items, job_dir, total=total, batch_size=batch_size, roots=roots,
                                   should_stop=should_stop):
            rows = _detect_batch(loaded, batch, done, threshold)
            out.append(rows)
            for row in rows:
                errors += bool(row[4])
                with_boxes += row[2] > 0
            per_class.update(box["label"] for row in rows if row[3] for box in json.loads(row[3]))
            done += len(batch)
            progress(done, total)
    summary = {"task": "detection", "images": done, "detected": done - errors, "errors": errors,
               "threshold": threshold, "boxes": sum(per_class.values()), "images_with_boxes": with_boxes,
               "boxes_per_class": {name: per_class.get(name, 0) for name in loaded.classes}, "classes": loaded.classes,
               "top_n": []}
    write_json_atomic(job_dir / SUMMARY, summary)
    return summary


def _detect_batch(loaded: LoadedDetector, batch: list[tuple[Item, np.ndarray | str]], first_row: int,
                  threshold: float) -> list[list]:
    """The batch's CSV rows; an image that cannot be read or sized gets its reason."""
    p = loaded.preprocess
    prepared: list[tuple[str, np.ndarray, Fit]] = []
    reasons: dict[int, str] = {}
    for i, (item, pixels) in enumerate(batch):
        if isinstance(pixels, str):
            reasons[i] = pixels
            continue
        try:
            assert item.path is not None  # detect-many reads files only (no dataset split)
            fit = plan_fit(image_size(item.path), p.width, p.height, fit_mode(loaded))
        except ImageError as exc:
            reasons[i] = str(exc)
            continue
        prepared.append((item.name, pixels.reshape(p.height, p.width, -1), fit))
    found = iter(detect_fitted(loaded, prepared, threshold) if prepared else [])
    rows = []
    for i, (item, _) in enumerate(batch):
        if i in reasons:
            rows.append([first_row + i, item.name, 0, "", reasons[i]])
            continue
        boxes = next(found)["boxes"]
        rows.append([first_row + i, item.name, len(boxes), json.dumps(boxes, separators=(",", ":")), ""])
    return rows
