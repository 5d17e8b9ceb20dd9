"""Turn a DatasetSpec into a build plan: class names and the image files of each split.

Reads folders, lists, archives and the parent dataset (for append); decodes no image. The
class list is the parent's classes (append) followed by the new source's classes in sorted or
labels-file order; every sample's label indexes that final list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from trainyard.core.errors import UserError
from trainyard.core.paths import is_inside
from trainyard.datasets.archive import ArchiveError, safe_extract
from trainyard.datasets.info import DatasetInfo
from trainyard.datasets.plan_table import SampleTable
from trainyard.datasets.sources import (
    MAX_IGNORED_LISTED,
    Sample,
    Skipped,
    ignored_line,
    parse_list,
    read_labels,
    scan_class_folders,
    scan_with_classes,
    set_ignored_apart,
)
from trainyard.datasets.spec import DatasetSpec
from trainyard.datasets.splits import relabel, split_per_class
from trainyard.datasets.storage import SPLITS


class DatasetError(UserError):
    """A dataset that cannot be built; the message says what to fix."""


@dataclass
class Parent:
    """The dataset version being appended to."""

    dir: Path
    info: DatasetInfo
    classes: list[str]


@dataclass
class BuildPlan:
    classes: list[str]
    splits: dict[str, SampleTable]  # new images only; the parent's are copied as they are
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    parent: Parent | None = None
    not_images: int = 0  # files in the folders that are not images
    ignored: list[str] = field(default_factory=list)  # their paths (sources.MAX_IGNORED_LISTED at most)


def _path(job_dir: Path, value: str) -> Path:
    return job_dir / Path(value).expanduser()  # an absolute value replaces job_dir


def _folder_source(root: Path, what: str) -> Path:
    if not root.is_dir():
        raise DatasetError(f"{what} folder not found: {root}")
    return root


def _extract(archive: Path, scratch: Path, what: str) -> Path:
    if not archive.is_file():
        raise DatasetError(f"{what} archive not found: {archive}")
    try:
        return safe_extract(archive, scratch / what)
    except ArchiveError as e:
        raise DatasetError(f"{what} archive refused: {e}") from None


def _labels(spec: DatasetSpec, job_dir: Path) -> list[str]:
    try:
        # the spec's validator requires labels_file whenever a list is given, the only callers
        assert spec.labels_file is not None
        return read_labels(_path(job_dir, spec.labels_file))
    except ValueError as e:
        raise DatasetError(str(e)) from None


def _read_list(spec: DatasetSpec, job_dir: Path, value: str, what: str,
               roots: list[Path] | None) -> tuple[list[Sample], list[Skipped]]:
    list_file = _path(job_dir, value)
    if not list_file.is_file():
        raise DatasetError(f"{what} list not found: {list_file}")
    root = _path(job_dir, spec.image_root) if spec.image_root else None
    samples, skipped = parse_list(list_file, _labels(spec, job_dir), root)
    if roots is None:
        return samples, skipped
    # A list may name any file on the machine: keep only those inside the data roots.
    allowed = []
    for s in samples:
        if any(is_inside(s.path, r) for r in roots):
            allowed.append(s)
        else:
            skipped.append(Skipped(str(s.path), "outside the allowed data folders"))
    return allowed, skipped


def _train_source(spec: DatasetSpec, job_dir: Path, scratch: Path, skipped: list[Skipped],
                  roots: list[Path] | None):
    """(class names, samples) of the training source."""
    if spec.train_list is not None:
        samples, bad = _read_list(spec, job_dir, spec.train_list, "train", roots)
        skipped += bad
        return _labels(spec, job_dir), samples
    if spec.train_archive is not None:
        root = _extract(_path(job_dir, spec.train_archive), scratch, "train")
    else:
        assert spec.train_folder is not None  # the validator requires exactly one training source
        root = _folder_source(_path(job_dir, spec.train_folder), "train")
    return scan_class_folders(root, skipped)


def _other_source(spec, job_dir, scratch, split, classes, skipped, roots) -> list[Sample] | None:
    """Samples of a separate val or test source labelled with ``classes``, or None if none."""
    folder, lst = getattr(spec, f"{split}_folder"), getattr(spec, f"{split}_list")
    archive = getattr(spec, f"{split}_archive", None)
    if lst is not None:
        samples, bad = _read_list(spec, job_dir, lst, split, roots)
        skipped += bad
        return _rename(samples, _labels(spec, job_dir), classes, skipped)
    if archive is not None:
        root = _extract(_path(job_dir, archive), scratch, split)
    elif folder is not None:
        root = _folder_source(_path(job_dir, folder), split)
    else:
        return None
    return scan_with_classes(root, classes, skipped)


def _rename(samples: list[Sample], names: list[str], classes: list[str],
            skipped: list[Skipped]) -> list[Sample]:
    """Relabel samples from ``names`` indices to ``classes`` indices, by class name."""
    index = {name: i for i, name in enumerate(classes)}
    out = []
    for s in samples:
        name = names[s.label]
        if name in index:
            out.append(Sample(s.path, index[name]))
        else:
            skipped.append(Skipped(str(s.path), f"class {name!r} is not in the training set"))
    return out


def read_parent(parent_dir: Path) -> Parent:
    """Load the info and class names of a built dataset folder."""
    info_file = parent_dir / "info.json"
    if not info_file.is_file():
        raise DatasetError(f"parent dataset not found (no info.json in {parent_dir})")
    info = DatasetInfo.of(json.loads(info_file.read_text()))
    return Parent(parent_dir, info, list(info.classes))


def collect(spec: DatasetSpec, job_dir: Path, scratch: Path,
            data_roots: list[Path] | None = None) -> BuildPlan:
    """Gather and split the samples a spec describes. Archives are extracted below ``scratch``.

    With ``data_roots``, images named by lists must lie inside one of them (folders are
    already held to their root: links out of them are not followed).
    """
    roots = [Path(r).resolve() for r in data_roots] if data_roots is not None else None
    skipped: list[Skipped] = []
    warnings: list[str] = []
    src_classes, train = _train_source(spec, job_dir, scratch, skipped, roots)
    parent = read_parent(_path(job_dir, spec.parent_dir)) if spec.parent_dir else None
    classes = list(parent.classes) if parent else []
    classes += [c for c in src_classes if c not in classes]
    train = _rename(train, src_classes, classes, skipped)
    others = {s: _other_source(spec, job_dir, scratch, s, classes, skipped, roots) for s in ("val", "test")}
    if parent is None and not train:
        raise DatasetError("no images found in the training source (looked for "
                           "jpg, jpeg, png, bmp, tif, tiff, webp, gif, ppm, pgm files)")
    existing = _parent_counts(parent) if parent else None
    result = split_per_class(
        train, classes,
        val_percent=0 if others["val"] is not None else spec.val_percent,
        test_percent=0 if others["test"] is not None else spec.test_percent,
        min_per_class=spec.min_per_class, max_per_class=spec.max_per_class,
        seed=spec.seed, existing=existing,
    )
    warnings += result.warnings
    splits = result.splits
    for split, samples in others.items():
        if samples is not None:
            kept = relabel(samples, result.remap)
            if len(kept) < len(samples):
                warnings.append(f"{len(samples) - len(kept)} {split} image(s) left out: their class was dropped")
            splits[split] = kept
    if len(result.classes) < 2:
        raise DatasetError(
            f"a dataset needs at least two classes with at least {spec.min_per_class} images "
            f"each; found {len(result.classes)} ({', '.join(result.classes) or 'none'})"
        )
    skipped, ignored = set_ignored_apart(skipped)
    if ignored:  # a README or labels file beside the images: named, apart from the unreadable images
        warnings.append(ignored_line(ignored, len(ignored)))
    tables = {split: SampleTable(samples) for split, samples in splits.items()}  # compact, for the workers
    return BuildPlan(result.classes, tables, skipped, warnings, parent, len(ignored), ignored[:MAX_IGNORED_LISTED])


def _parent_counts(parent: Parent) -> dict[int, int]:
    """Images each parent class holds across all its splits, by label."""
    totals = {i: 0 for i in range(len(parent.classes))}
    for split in SPLITS:
        for name, n in parent.info.counts.get(split, {}).items():
            totals[parent.classes.index(name)] += n
    return totals
