"""Build a detection dataset: decode and fit every image with the classification build's
pipeline (worker processes, shared memory, results in order) and store boxes beside them.

Called by datasets/build.py's ``build_dataset`` for a spec whose task is detection, inside its
``dataset.tmp`` -> ``dataset`` rename, so a failed or aborted build leaves nothing behind.
"""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from trainyard.core.events import EventWriter
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.detection.collect import DetectionPlan, collect_detection
from trainyard.datasets.detection.geometry import plan_fit
from trainyard.datasets.detection.stats import COUNTS_MEANING, box_sizes, class_counts
from trainyard.datasets.detection.store import TASK, DetectionSplitWriter
from trainyard.datasets.leftovers import new_shm_name
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.sources import Skipped
from trainyard.datasets.storage import SPLITS, finish_dataset

LISTED_IN_LOG = 20


def build_detection_into(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                         progress_class) -> dict:
    """Build into ``tmp``; return the info dict (also written as tmp/info.json)."""
    plan = collect_detection(spec, job_dir)
    geometry = Geometry(spec.width, spec.height, spec.channels, spec.resize, spec.encoding)
    total = sum(len(v) for v in plan.splits.values())
    events.emit("summary", task=TASK)
    events.log(f"{plan.format} labels, {len(plan.classes)} classes, {total} images to process "
               f"({', '.join(f'{k} {len(v)}' for k, v in plan.splits.items() if v)})")
    tmp.mkdir(parents=True)
    writers = {split: DetectionSplitWriter(tmp / split, spec.height, spec.width, spec.channels, spec.encoding,
                                           mean=(split == "train"), resize=spec.resize)
               for split, samples in plan.splits.items() if samples}
    progress = progress_class(events, total, counts=lambda: _counts(plan.classes, writers)[0])
    try:
        with DecodePipeline(geometry, workers, shm_name=new_shm_name(tmp.parent), count=total) as pipeline:
            _write(plan, writers, pipeline, spec, progress)
    except BrokenProcessPool:
        raise DatasetError("an image worker process died unexpectedly (out of memory, or killed)") from None
    for writer in writers.values():
        writer.close()
    _report(events, plan)
    info = _info(spec, plan, writers)
    _check_usable(info)
    finish_dataset(tmp, plan.classes, writers["train"].mean(), info)
    return info


def _write(plan: DetectionPlan, writers: dict[str, DetectionSplitWriter], pipeline: DecodePipeline,
           spec, progress) -> None:
    order = [(split, i, s) for split in SPLITS for i, s in enumerate(plan.splits.get(split, []))]
    items = [(str(s.path), (spec.seed, SPLITS.index(split), i)) for split, i, s in order]
    totals = {split: len(samples) for split, samples in plan.splits.items()}
    for (split, i, sample), (pixels, encoded, reason) in zip(order, pipeline.run(items), strict=True):
        if reason is not None:
            plan.skipped.append(Skipped(str(sample.path), reason))
        else:
            assert pixels is not None  # the pipeline gives pixels whenever there is no reason
            fit = plan_fit(sample.size, spec.width, spec.height, spec.resize)
            writers[split].append(pixels, fit.boxes_to_stored(sample.boxes), sample.labels, fit.row(), encoded)
        last = i + 1 == totals[split]
        progress.update(split, i + 1, totals[split], force=last)
        if last:
            progress.finished += totals[split]


def _counts(classes: list[str], writers: dict[str, DetectionSplitWriter]) -> tuple[dict, dict, dict]:
    images, boxes, empty = {}, {}, {}
    for split, writer in writers.items():
        _, labels, offsets = writer.box_arrays()
        images[split], boxes[split], empty[split] = class_counts(classes, labels, offsets)
    return images, boxes, empty


def _info(spec, plan: DetectionPlan, writers: dict[str, DetectionSplitWriter]) -> dict:
    counts, box_counts, empty = _counts(plan.classes, writers)
    return {
        "version": 1, "task": TASK, "name": spec.name, "labels_format": plan.format,
        "classes": plan.classes, "counts": counts, "box_counts": box_counts, "empty_images": empty,
        "counts_meaning": COUNTS_MEANING,
        "box_sizes": box_sizes({s: w.box_arrays()[0] for s, w in writers.items()}, spec.width, spec.height),
        "images": {split: len(w) for split, w in writers.items()},
        "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
        "label_notes": [{"path": s.path, "reason": s.reason} for s in plan.notes],
        "not_images": plan.not_images, "warnings": plan.warnings,
        "width": spec.width, "height": spec.height, "channels": spec.channels, "resize": spec.resize,
        "encoding": spec.encoding, "parent": None, "seed": spec.seed,
    }


def _check_usable(info: dict) -> None:
    if not info["images"].get("train"):
        raise DatasetError("no usable training image: every image was left out (see the skipped list)")
    if not sum(info["box_counts"]["train"].values()):
        raise DatasetError("no usable box in the training images: every box was left out or none "
                           "was labelled (see the skipped list)")


def _report(events: EventWriter, plan: DetectionPlan) -> None:
    for message in plan.warnings:
        events.log(message, "warning")
    for s in plan.skipped[:LISTED_IN_LOG]:
        events.log(f"skipped {s.path}: {s.reason}", "warning")
    if len(plan.skipped) > LISTED_IN_LOG:
        events.log(f"... and {len(plan.skipped) - LISTED_IN_LOG} more skipped (listed in info.json)", "warning")
    if plan.notes:
        events.log(f"{len(plan.notes)} note(s): boxes clipped or images without labels (listed in info.json)")
