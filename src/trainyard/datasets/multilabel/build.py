"""Build a multi-label dataset: the classification build's pipeline (worker processes, shared
memory, results in order, resume checkpoints) with multi-hot targets stored beside the images.

Called by datasets/build.py's ``build_dataset`` inside its ``dataset.tmp`` -> ``dataset`` rename.
The info holds per-label image counts per split, the train split's label co-occurrence (images
with both labels) and the mean labels per image.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np

from trainyard.core.events import EventWriter
from trainyard.core.paths import resolve_roots
from trainyard.datasets import build_stream, resume_state
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.multilabel.collect import MultiLabelPlan, collect_multilabel
from trainyard.datasets.multilabel.store import TASK, MultiLabelSplitWriter
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.resume_state import ResumeState
from trainyard.datasets.storage import SPLITS, finish_dataset

LISTED_IN_LOG = 20


def build_multilabel_into(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                          roots, progress_class) -> dict:
    """Build into ``tmp`` (resuming a killed build of the same plan there); the info dict."""
    plan = collect_multilabel(spec, job_dir, None if roots is None else resolve_roots(roots))
    geometry = Geometry(spec.width, spec.height, spec.image_channels, spec.resize, spec.encoding)
    total = sum(len(v) for v in plan.splits.values())
    plan_hash = resume_state.fingerprint(spec.model_dump_json(), geometry,
                                         {split: _digest(rows) for split, rows in plan.splits.items()})
    resume = resume_state.load(tmp, plan_hash)
    events.emit("summary", task=TASK)
    events.log(f"{len(plan.classes)} labels, {total} images to process "
               f"({', '.join(f'{k} {len(v)}' for k, v in plan.splits.items() if v)})"
               + (f"; resuming after image {resume.position}" if resume else ""))
    resume, writers = build_stream.open_writers(resume, events, lambda r: _writers(tmp, spec, plan, r))
    progress = progress_class(events, total, counts=lambda: label_counts(plan.classes, writers))
    resume = build_stream.started(tmp, plan_hash, resume, writers)
    progress.finished = build_stream.finished_before(plan.splits, resume.position)
    skipped = build_stream.decode_all(geometry, workers, tmp, total - resume.position, lambda pipeline: _write(
        plan, writers, pipeline, spec.seed, progress, (tmp, plan_hash, resume)))
    for writer in writers.values():
        writer.close()
    (tmp / resume_state.FILE).unlink()
    info = _info(spec, plan, writers, skipped)
    _report(events, plan, skipped)
    if "train" not in writers or not len(writers["train"]):
        raise DatasetError("no usable training image: every image was left out (see the skipped list)")
    finish_dataset(tmp, plan.classes, writers["train"].mean(), info)
    return info


def _digest(rows: list[tuple[str, np.ndarray]]) -> str:
    """One hash of a split's images and targets: a changed list is another plan."""
    h = hashlib.sha256()
    for path, target in rows:
        h.update(f"{path}\0".encode())
        h.update(target.tobytes())
    return h.hexdigest()


def _writers(tmp: Path, spec, plan: MultiLabelPlan, resume: ResumeState | None) -> dict[str, MultiLabelSplitWriter]:
    if resume is None:
        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    args = (spec.height, spec.width, spec.image_channels, spec.encoding, len(plan.classes))
    return {split: (MultiLabelSplitWriter.resume(tmp / split, *args, resume.writers[split], mean=split == "train")
                    if resume else MultiLabelSplitWriter(tmp / split, *args, mean=split == "train"))
            for split, rows in plan.splits.items() if rows}


def _write(plan: MultiLabelPlan, writers: dict[str, MultiLabelSplitWriter], pipeline: DecodePipeline,
           seed: int, progress, resume: tuple[Path, str, ResumeState]) -> list[dict]:
    """Stream the plan's images from the checkpoint on (build_stream, as a classification build's)."""
    def entries():
        base = 0
        for split in SPLITS:
            rows = plan.splits.get(split, [])
            for i in range(max(0, resume[2].position - base), len(rows)):
                yield split, i, rows[i][0], rows[i][1]
            base += len(rows)

    def append(split: str, target: np.ndarray, pixels: np.ndarray, encoded: bytes | None) -> None:
        writers[split].append(pixels, target, encoded)

    totals = {split: len(plan.splits.get(split, [])) for split in SPLITS}
    return build_stream.write_entries(entries(), totals, append, writers, pipeline, seed, progress, resume)


def label_counts(classes: list[str], writers: dict[str, MultiLabelSplitWriter]) -> dict[str, dict[str, int]]:
    """{split: {label: images that have it}}."""
    return {split: dict(zip(classes, w.label_counts.tolist())) for split, w in writers.items()}


def _info(spec, plan: MultiLabelPlan, writers: dict[str, MultiLabelSplitWriter], skipped: list[dict]) -> dict:
    train = writers["train"].targets().astype(np.int64) if "train" in writers else np.zeros((0, len(plan.classes)))
    return {
        "version": 1, "task": TASK, "name": spec.name, "classes": plan.classes,
        "counts": label_counts(plan.classes, writers),
        "counts_meaning": {"counts": "images that have the label"},
        "cooccurrence": (train.T @ train).tolist(),  # [i][j]: train images with labels i and j
        "labels_per_image": {split: round(float(w.targets().sum(axis=1).mean()), 3) if len(w) else 0.0
                             for split, w in writers.items()},
        "images": {split: len(w) for split, w in writers.items()},
        "skipped": skipped, "not_images": 0, "ignored": [], "warnings": plan.warnings,
        "width": spec.width, "height": spec.height, "channels": spec.image_channels, "resize": spec.resize,
        "encoding": spec.encoding, "parent": None, "seed": spec.seed,
    }


def _report(events: EventWriter, plan: MultiLabelPlan, skipped: list[dict]) -> None:
    for message in plan.warnings:
        events.log(message, "warning")
    for s in skipped[:LISTED_IN_LOG]:
        events.log(f"skipped {s['path']}: {s['reason']}", "warning")
    if len(skipped) > LISTED_IN_LOG:
        events.log(f"... and {len(skipped) - LISTED_IN_LOG} more skipped (listed in info.json)", "warning")
