"""Build a dataset: decode and resize every image in parallel and store the splits.

The build writes into ``JOB/dataset.tmp`` and renames it to ``JOB/dataset`` only when every
file is complete, so a crash or abort never leaves a half-built dataset behind. Parent images
(append) are copied first, then the new images of every split stream through one
DecodePipeline (worker processes, bounded memory, results in order).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from trainyard.core.cpus import granted_cpus
from trainyard.core.events import EventWriter
from trainyard.core.jobproc import Aborted, Progress
from trainyard.datasets import build_stream, disk_check, resume_state
from trainyard.datasets.collect import BuildPlan, DatasetError, collect
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.detection.build import build_detection_into
from trainyard.datasets.multilabel.build import build_multilabel_into
from trainyard.datasets.resume_state import ResumeState
from trainyard.datasets.segmentation.build import build_segmentation_into
from trainyard.datasets.sources import Skipped
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import SPLITS, finish_dataset, open_split
from trainyard.datasets.told import told_by_files

__all__ = ["DatasetError", "build_dataset"]

PROGRESS_EVERY_S = 0.5
PARENT_BATCH = 256


class BuildProgress(Progress):
    """Progress of the whole build, phase by phase, with an ETA for the whole build, and the
    per-class counts so far (``counts``: a callable) as summary events with each progress
    event, so pages show the counts as they grow."""

    def __init__(self, events: EventWriter, total: int, counts=None):
        super().__init__(events, every_s=PROGRESS_EVERY_S)
        self.total, self.counts = total, counts
        self.finished = 0  # images handled in earlier phases

    def update(self, phase: str, done: int, phase_total: int, force: bool = False) -> None:
        overall = (self.finished + done, self.total)
        if self.report(done, phase_total, phase, force, overall) and self.counts is not None:
            self.events.emit("summary", counts=self.counts())


def _copy_parent(plan: BuildPlan, split: str, writer: SplitWriter, progress: BuildProgress) -> None:
    """Copy a parent split's images as stored (labels keep their index: parent classes come first).

    Encoded images are copied byte for byte when the encoding is unchanged, so appending to a
    JPEG dataset does not compress the old images a second time.
    """
    if plan.parent is None or not (plan.parent.dir / split / "meta.json").is_file():
        return
    reader = open_split(plan.parent.dir, split)
    same_bytes = reader.encoding == writer.encoding != "none"
    for start in range(0, len(reader), PARENT_BATCH):
        idx = np.arange(start, min(start + PARENT_BATCH, len(reader)))
        for i, image, label in zip(idx, reader.read_batch(idx), reader.labels[idx]):
            writer.append(image, int(label), reader.read_encoded(int(i)) if same_bytes else None)
        progress.update(f"{split} (parent)", int(idx[-1]) + 1, len(reader))


def _open_writers(plan: BuildPlan, folder: Path, geometry: Geometry,
                  resume: ResumeState | None = None) -> dict[str, SplitWriter]:
    """A writer for each split that gets images, new or from the parent (reopened at their
    checkpoint when resuming)."""
    writers = {}
    g = geometry
    for split in SPLITS:
        from_parent = plan.parent is not None and (plan.parent.dir / split / "meta.json").is_file()
        if not (plan.splits.get(split) or from_parent):
            continue
        mean, classes = split == "train", len(plan.classes)
        writers[split] = (SplitWriter.resume(folder / split, g.height, g.width, g.channels, g.encoding,
                                             resume.writers[split], mean=mean, classes=classes, depth=g.depth)
                          if resume else SplitWriter(folder / split, g.height, g.width, g.channels, g.encoding,
                                                     mean=mean, classes=classes, depth=g.depth))
    return writers


def _geometry(spec, plan: BuildPlan, events: EventWriter) -> Geometry:
    """The spec's geometry, or the parent's when appending (stored images cannot change size)."""
    if plan.parent is None:
        told = told_by_files(spec, plan)
        geo = Geometry(spec.width, spec.height, told.channels, spec.resize, spec.encoding, told.depth,
                       told.convert_deep)
        if geo.full_depth and geo.encoding != "none":
            raise DatasetError(f"{geo.depth}-bit images with {geo.channels} channel(s) are stored raw: "
                               f"use --encoding none")
        if geo.depth != 8:
            events.log(f"images stored at {geo.depth} bits, {geo.channels} channel(s)")
        if told.note:
            plan.warnings.append(told.note)  # logged with the others and kept in info.json
        return geo
    geo = Geometry(spec.width, spec.height, spec.image_channels, spec.resize, spec.encoding, spec.depth or 8)
    p = plan.parent.info
    if p.width is None or p.height is None or p.channels is None or p.resize is None:
        raise DatasetError(f"the parent dataset's info.json in {plan.parent.dir} does not say its image size")
    parent_geo = Geometry(p.width, p.height, p.channels, p.resize, spec.encoding, p.depth)
    if parent_geo != geo:
        events.log(f"appending keeps the parent's {p.width}x{p.height}, {p.channels} "
                   f"channel(s), resize {p.resize!r}", "warning")
    return parent_geo


def _class_counts(classes: list[str], writers: dict[str, SplitWriter]) -> dict[str, dict[str, int]]:
    """{split: {class name: images written}}."""
    return {split: dict(zip(classes, w.counts[:len(classes)].tolist())) for split, w in writers.items()}


def _info(spec, plan: BuildPlan, geometry: Geometry, writers: dict[str, SplitWriter]) -> dict:
    counts = _class_counts(plan.classes, writers)
    info = {
        "version": 1, "name": spec.name, "classes": plan.classes, "counts": counts,
        "images": {split: len(w) for split, w in writers.items()},
        "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped], "not_images": plan.not_images,
        "ignored": plan.ignored,
        "warnings": plan.warnings, "width": geometry.width, "height": geometry.height,
        "channels": geometry.channels, "resize": geometry.resize, "encoding": geometry.encoding,
        "parent": str(plan.parent.dir) if plan.parent else None, "seed": spec.seed, "depth": geometry.depth,
    }
    stats = writers["train"].channel_stats()  # a full-depth dataset's, which training divides by
    if stats is not None:
        info["channel_mean"], info["channel_std"] = stats
    return info


def _check_usable(info: dict) -> None:
    train = info["counts"].get("train", {})
    if not sum(info["images"].values()):
        raise DatasetError("no usable image: every file was skipped (see the skipped list)")
    usable = [name for name, n in train.items() if n > 0]
    if len(usable) < 2:
        raise DatasetError(f"fewer than two classes have usable training images "
                           f"({', '.join(usable) or 'none'}); see the skipped list")


def _report(events: EventWriter, plan: BuildPlan) -> None:
    for message in plan.warnings:
        events.log(message, "warning")
    for s in plan.skipped[:20]:
        events.log(f"skipped {s.path}: {s.reason}", "warning")
    if len(plan.skipped) > 20:
        events.log(f"... and {len(plan.skipped) - 20} more skipped (listed in info.json)", "warning")


def build_dataset(spec, job_dir: Path, events: EventWriter, workers: int | None = None,
                  data_roots: Iterable[Path] | None = None) -> dict:
    """Build the dataset ``spec`` describes into ``job_dir/dataset``; return its info dict.

    ``workers``: decoding processes (default: one per CPU granted; 1 decodes in this process).
    ``data_roots``: images named in lists outside these folders are skipped (default: the
    spec's ``data_roots``; None there too means no check).
    Raises DatasetError for problems the user must fix (then no dataset folder is left). A build
    that fails otherwise, or is killed, keeps ``dataset.tmp`` with its checkpoint: running the
    same job again resumes it (datasets/resume_state.py); an abort removes it.
    """
    job_dir = Path(job_dir)
    final, tmp, scratch = job_dir / "dataset", job_dir / "dataset.tmp", job_dir / "extract.tmp"
    if final.exists():
        raise DatasetError(f"{final} already exists; a dataset version is never rebuilt in place")
    workers = workers or granted_cpus(use_omp=False)
    try:
        roots = data_roots if data_roots is not None else spec.data_roots
        info = BUILDS[spec.task](tmp, spec, job_dir, events, workers, roots)
        os.replace(tmp, final)
    except (DatasetError, Aborted, KeyboardInterrupt):
        shutil.rmtree(tmp, ignore_errors=True)  # nothing a resume could finish differently
        raise
    except BaseException:
        if not resume_state.resumable(job_dir):
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = {k: v for k, v in info.items() if k not in ("skipped", "warnings", "ignored")}
    events.emit("result", **summary, skipped_total=len(info["skipped"]), skipped=info["skipped"][:100])
    return info


def _build_classification(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                          roots: Iterable[Path | str] | None) -> dict:
    """Class folders or lists into ``tmp``, resuming a build that was cut off."""
    plan = collect(spec, job_dir, job_dir / "extract.tmp", None if roots is None else [Path(r) for r in roots])
    geometry = _geometry(spec, plan, events)
    total = sum(len(v) for v in plan.splits.values())
    plan_hash = resume_state.fingerprint(spec.model_dump_json(), geometry,
                                         {k: v.digest() for k, v in plan.splits.items()})
    resume = resume_state.load(tmp, plan_hash)
    if resume is None:
        shutil.rmtree(tmp, ignore_errors=True)
        _check_room(job_dir, plan, geometry, total)
    events.log(f"{len(plan.classes)} classes, {total} new images to process "
               f"({', '.join(f'{k} {len(v)}' for k, v in plan.splits.items() if v)})"
               + (f"; resuming after image {resume.position}" if resume else ""))
    return _build_into(tmp, spec, plan, geometry, events, workers, (total, plan_hash, resume))


def _build_detection(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                     roots: Iterable[Path | str] | None) -> dict:
    """Image folders with box labels into ``tmp`` (datasets/detection/; its own path checks)."""
    return build_detection_into(tmp, spec, job_dir, events, workers, BuildProgress)


def _build_segmentation(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                        roots: Iterable[Path | str] | None) -> dict:
    """Image folders with index-PNG masks into ``tmp`` (datasets/segmentation/)."""
    return build_segmentation_into(tmp, spec, job_dir, events, workers, BuildProgress)


def _build_multilabel(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                      roots: Iterable[Path | str] | None) -> dict:
    """CSV lists of images with several labels into ``tmp`` (datasets/multilabel/)."""
    return build_multilabel_into(tmp, spec, job_dir, events, workers, roots, BuildProgress)


# How a dataset of each task builds (core/tasks.py names the tasks): a new task registers its own.
BUILDS: dict[str, Callable[..., dict]] = {"classification": _build_classification, "detection": _build_detection,
                                          "multilabel": _build_multilabel, "segmentation": _build_segmentation}


def _check_room(job_dir: Path, plan: BuildPlan, geometry: Geometry, total: int) -> None:
    """DatasetError (proposing --encoding jpeg) when the disk cannot hold the build."""
    parent = sum(plan.parent.info.images.values()) if plan.parent else 0
    paths = [t.path(int(i)) for t in plan.splits.values() for i in disk_check.spread(len(t))]
    try:
        disk_check.check_room(job_dir, total + parent, geometry, paths[: disk_check.SAMPLE])
    except disk_check.DiskFull as e:
        raise DatasetError(str(e)) from None


def _build_into(tmp: Path, spec, plan: BuildPlan, geometry: Geometry, events: EventWriter,
                workers: int, run: tuple[int, str, ResumeState | None]) -> dict:
    total, plan_hash, resume = run
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        writers = _open_writers(plan, tmp, geometry, resume)
    except (OSError, ValueError, KeyError) as e:  # a checkpoint whose files were damaged or removed
        events.log(f"cannot resume ({e}); building from the start", "warning")
        shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        resume = None
        writers = _open_writers(plan, tmp, geometry)
    progress = BuildProgress(events, total, counts=lambda: _class_counts(plan.classes, writers))
    if resume is None:
        for split, writer in writers.items():
            _copy_parent(plan, split, writer, progress)
    resume = build_stream.started(tmp, plan_hash, resume, writers)
    progress.finished = build_stream.finished_before(plan.splits, resume.position)
    skipped = build_stream.decode_all(geometry, workers, tmp, total - resume.position, lambda pipeline: (
        build_stream.write_new(plan, writers, pipeline, spec.seed, progress, tmp, plan_hash, resume)))
    plan.skipped += [Skipped(s["path"], s["reason"]) for s in skipped]
    for writer in writers.values():
        writer.close()
    (tmp / resume_state.FILE).unlink()
    _report(events, plan)
    info = _info(spec, plan, geometry, writers)
    _check_usable(info)
    finish_dataset(tmp, plan.classes, writers["train"].mean(), info)
    return info
