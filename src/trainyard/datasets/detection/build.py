"""Build a detection dataset: decode and fit every image with the classification build's
pipeline (worker processes, shared memory, results in order) and store boxes beside them.

Called by datasets/build.py's ``build_dataset`` for a spec whose task is detection, inside its
``dataset.tmp`` -> ``dataset`` rename, so a failed or aborted build leaves nothing behind. A
killed one resumes as a classification build does (datasets/resume_state.py, the same stream of
build_stream.py with its checkpoints): the split writers keep their boxes in .part files at each
checkpoint, and every image's noise seed is its place in the plan, so the result is byte-identical.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np

from trainyard.core.events import EventWriter
from trainyard.datasets import build_stream, resume_state
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.detection.collect import DetectionPlan, DetectionSample, collect_detection
from trainyard.datasets.detection.geometry import plan_fit
from trainyard.datasets.detection.stats import COUNTS_MEANING, box_sizes, class_counts
from trainyard.datasets.detection.store import TASK, DetectionSplitWriter
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.resume_state import ResumeState
from trainyard.datasets.sources import Skipped
from trainyard.datasets.storage import SPLITS, finish_dataset

LISTED_IN_LOG = 20


def build_detection_into(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                         progress_class) -> dict:
    """Build into ``tmp`` (resuming the checkpoint of a killed build of the same plan there);
    return the info dict (also written as tmp/info.json)."""
    plan = collect_detection(spec, job_dir)
    geometry = Geometry(spec.width, spec.height, spec.image_channels, spec.resize, spec.encoding)
    total = sum(len(v) for v in plan.splits.values())
    plan_hash = resume_state.fingerprint(spec.model_dump_json(), geometry,
                                         {split: _digest(samples) for split, samples in plan.splits.items()})
    resume = resume_state.load(tmp, plan_hash)
    events.emit("summary", task=TASK)
    events.log(f"{plan.format} labels, {len(plan.classes)} classes, {total} images to process "
               f"({', '.join(f'{k} {len(v)}' for k, v in plan.splits.items() if v)})"
               + (f"; resuming after image {resume.position}" if resume else ""))
    resume, writers = build_stream.open_writers(resume, events, lambda r: _writers(tmp, spec, plan, r))
    progress = progress_class(events, total, counts=lambda: _counts(plan.classes, writers)[0])
    resume = build_stream.started(tmp, plan_hash, resume, writers)
    progress.finished = build_stream.finished_before(plan.splits, resume.position)
    skipped = build_stream.decode_all(geometry, workers, tmp, total - resume.position, lambda pipeline: _write(
        plan, writers, pipeline, spec, progress, (tmp, plan_hash, resume)))
    plan.skipped += [Skipped(s["path"], s["reason"]) for s in skipped]
    for writer in writers.values():
        writer.close()
    (tmp / resume_state.FILE).unlink()
    _report(events, plan)
    info = _info(spec, plan, writers)
    _check_usable(info)
    finish_dataset(tmp, plan.classes, writers["train"].mean(), info)
    return info


def _digest(samples: list[DetectionSample]) -> str:
    """One hash of a split's images, sizes and boxes: a changed label file is another plan."""
    h = hashlib.sha256()
    for sample in samples:
        h.update(f"{sample.path}\0{sample.size}\0".encode())
        h.update(np.ascontiguousarray(sample.boxes, np.float64).tobytes())
        h.update(np.ascontiguousarray(sample.labels, np.int64).tobytes())
    return h.hexdigest()


def _writers(tmp: Path, spec, plan: DetectionPlan, resume: ResumeState | None) -> dict[str, DetectionSplitWriter]:
    """A writer per split with images, reopened at the checkpoint of ``resume`` (else ``tmp`` afresh)."""
    if resume is None:
        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    args = (spec.height, spec.width, spec.image_channels, spec.encoding)
    return {split: (DetectionSplitWriter.resume(tmp / split, *args, resume.writers[split], mean=split == "train",
                                                resize=spec.resize) if resume
                    else DetectionSplitWriter(tmp / split, *args, mean=split == "train", resize=spec.resize))
            for split, samples in plan.splits.items() if samples}


def _write(plan: DetectionPlan, writers: dict[str, DetectionSplitWriter], pipeline: DecodePipeline,
           spec, progress, resume: tuple[Path, str, ResumeState]) -> list[dict]:
    """Stream the plan's images from the checkpoint on (build_stream, as a classification build's)."""
    def entries():
        base = 0
        for split in SPLITS:
            samples = plan.splits.get(split, [])
            for i in range(max(0, resume[2].position - base), len(samples)):
                yield split, i, str(samples[i].path), samples[i]
            base += len(samples)

    def append(split: str, sample: DetectionSample, pixels: np.ndarray, encoded: bytes | None) -> None:
        fit = plan_fit(sample.size, spec.width, spec.height, spec.resize)
        writers[split].append(pixels, fit.boxes_to_stored(sample.boxes), sample.labels, fit.row(), encoded)

    totals = {split: len(plan.splits.get(split, [])) for split in SPLITS}
    return build_stream.write_entries(entries(), totals, append, writers, pipeline, spec.seed, progress, resume)


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
        "not_images": plan.not_images, "ignored": plan.ignored, "warnings": plan.warnings,
        "width": spec.width, "height": spec.height, "channels": spec.image_channels, "resize": spec.resize,
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
