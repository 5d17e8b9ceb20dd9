"""Turn a detection spec into a plan: each split's images with their checked boxes.

Images are found in the image folders (the classification builder's walk: links out of the
folder skipped), labels read by format (told by ``labels_format`` or by the files), and the two
matched by key (relative path without extension). Each image's size is read from its header
here, so boxes are checked and clipped before any pixel is decoded. Everything left out or
changed is listed: ``skipped`` (left out) and ``notes`` (kept, but changed or without labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.boxes import BoxReport, check_boxes
from trainyard.datasets.detection.label_sources import read_labels
from trainyard.datasets.detection.labels import Labels, class_order, image_key, parse_classes
from trainyard.datasets.detection.sizes import image_size
from trainyard.datasets.images import ImageError
from trainyard.datasets.sources import MAX_IGNORED_LISTED, Skipped, iter_images, set_ignored_apart
from trainyard.datasets.splits import split_off


@dataclass
class DetectionSample:
    path: Path
    size: tuple[int, int]  # original (w, h), upright as the build decodes it
    boxes: np.ndarray  # (b, 4) float64, original pixels, inside the image
    labels: np.ndarray  # (b,) int64 into the plan's classes


@dataclass
class DetectionPlan:
    classes: list[str]
    format: str
    splits: dict[str, list[DetectionSample]]
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_images: int = 0
    ignored: list[str] = field(default_factory=list)  # the not-image files' paths


def _images(folder: Path, skipped: list[Skipped], what: str) -> dict[str, Path]:
    """Image files below ``folder`` by key; two images with one key are both left out."""
    if not folder.is_dir():
        raise DatasetError(f"{what} image folder not found: {folder}")
    found: dict[str, list[Path]] = {}
    for path in iter_images(folder, folder.resolve(), skipped):
        found.setdefault(image_key(path, folder), []).append(path)
    out = {}
    for key, paths in sorted(found.items()):
        if len(paths) == 1:
            out[key] = paths[0]
        else:
            for p in paths:
                skipped.append(Skipped(str(p), f"{len(paths)} images share the name {key!r}: "
                                       "which one its labels belong to is unknown"))
    return out


def _match(images: dict[str, Path], labels: Labels, mapping, index, plan: DetectionPlan,
           report: BoxReport) -> list[DetectionSample]:
    samples = []
    for key, path in images.items():
        if key in labels.unreadable:
            continue  # its label file's problem is listed, naming the image as left out
        raw = labels.boxes.get(key)
        if raw is None and not labels.absent_means_empty:
            plan.skipped.append(Skipped(str(path), "not in the COCO file: left out (unlabelled)"))
            continue
        try:
            size = image_size(path)
        except ImageError as e:
            plan.skipped.append(Skipped(str(path), str(e)))
            continue
        if raw is None:
            plan.notes.append(Skipped(str(path), "no label file: kept as an image with no boxes"))
        boxes, box_labels = check_boxes(raw or [], size, labels.normalised, mapping, index, report)
        samples.append(DetectionSample(path, size, boxes, box_labels))
    for key, source in sorted(labels.sources.items()):
        if key not in images:
            what = source if labels.absent_means_empty else f"{source}: {key}"
            plan.skipped.append(Skipped(what, "labels with no image file: left out"))
    return samples


def collect_detection(spec, job_dir: Path) -> DetectionPlan:
    """The plan of the detection dataset ``spec`` describes (paths relative to ``job_dir``)."""
    mapping = parse_classes(spec.classes)
    skipped: list[Skipped] = []
    train_images = _images(job_dir / spec.train_folder, skipped, "train")
    fmt, train_labels = read_labels(job_dir / spec.train_labels, spec.labels_format, mapping)
    used = {b.label for boxes in train_labels.boxes.values() for b in boxes if b.unknown is None}
    classes = class_order(mapping, train_labels.names, used)
    plan = DetectionPlan(classes, fmt, {})
    report = BoxReport()
    index = {name: i for i, name in enumerate(classes)}
    # Every name maps to itself unless the list says otherwise; val names not in train are unknown.
    train = _match(train_images, train_labels, mapping, index, plan, report)
    plan.warnings += train_labels.notes
    plan.skipped += train_labels.problems
    given = {}
    for split in ("val", "test"):
        if getattr(spec, f"{split}_folder") is not None:
            images = _images(job_dir / getattr(spec, f"{split}_folder"), skipped, split)
            _, labels = read_labels(job_dir / getattr(spec, f"{split}_labels"), fmt, mapping)
            given[split] = _match(images, labels, mapping, index, plan, report)
            plan.warnings += labels.notes
            plan.skipped += labels.problems
    train, val, test = split_off(train, 0 if "val" in given else spec.val_percent,
                                 0 if "test" in given else spec.test_percent, spec.seed, salt=29)
    plan.splits = {"train": train, "val": given.get("val", val), "test": given.get("test", test)}
    skipped, ignored = set_ignored_apart(skipped)
    plan.not_images, plan.ignored = len(ignored), ignored[:MAX_IGNORED_LISTED]
    plan.skipped += skipped + report.skipped + report.unknown_listing()
    plan.notes += report.notes
    return plan
