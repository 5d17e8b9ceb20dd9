"""Read a multi-label dataset's CSV lists into a plan: images, their label sets, the splits.

Each row is ``path,label;label;...`` (``|`` separates labels too; a header row ``path,labels``
is allowed; an image with no label is a negative example: ``path,``). Rows are read with the
csv module, so a quoted path may hold commas. Every problem the user must fix is a DatasetError
naming the file and line: a row without a path, an empty label, a missing image, an image
outside the data roots, a validation label never seen in training.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainyard.core.paths import PathNotAllowed, inside_roots
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.splits import split_off
from trainyard.datasets.storage import SPLITS

SEPARATORS = re.compile(r"[;|]")
HEADER = ("path", "labels")


@dataclass(frozen=True)
class Row:
    """One image of a list: where it is, the line that named it, its labels (names)."""

    path: Path
    where: str  # "FILE line N", for errors about it
    labels: tuple[str, ...]


@dataclass
class MultiLabelPlan:
    """What a build writes: the label names (sorted) and, per split, (image path, multi-hot row)."""

    classes: list[str]
    splits: dict[str, list[tuple[str, np.ndarray]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _labels(field_text: str, where: str) -> tuple[str, ...]:
    """The labels of one row's second column, each once, in their order; '' is no label."""
    if not field_text.strip():
        return ()
    names = [name.strip() for name in SEPARATORS.split(field_text)]
    if "" in names:
        raise DatasetError(f"{where}: an empty label in {field_text!r} (a separator with no name beside it)")
    return tuple(dict.fromkeys(names))


def read_rows(list_file: Path, image_root: Path | None, roots: list[Path] | None) -> list[Row]:
    """The rows of one CSV list, images checked to exist (relative paths from ``image_root``,
    else the list's folder); DatasetError at the first bad row."""
    base = image_root if image_root is not None else list_file.parent
    rows: list[Row] = []
    try:
        handle = open(list_file, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise DatasetError(f"cannot read the list {list_file}: {exc.strerror or exc}") from None
    with handle:
        reader = csv.reader(handle)
        for fields in reader:
            where = f"{list_file} line {reader.line_num}"
            if not fields or not any(f.strip() for f in fields):
                continue
            if not rows and tuple(f.strip().lower() for f in fields) == HEADER:
                continue
            if len(fields) > 2:
                raise DatasetError(f"{where}: expected 2 columns (path,labels), got {len(fields)}; "
                                   "separate labels with ';' or '|', quote a path with commas")
            path_text = fields[0].strip()
            if not path_text:
                raise DatasetError(f"{where}: the row has no image path")
            path = base / path_text  # an absolute path wins
            if roots is not None:
                try:
                    inside_roots(path, roots, must_exist=False)  # roots resolved once, by the caller
                except PathNotAllowed:
                    raise DatasetError(f"{where}: image {path_text} is outside the data roots") from None
            if not path.is_file():
                raise DatasetError(f"{where}: image {path_text} not found (looked at {path})")
            rows.append(Row(path, where, _labels(fields[1] if len(fields) > 1 else "", where)))
    if not rows:
        raise DatasetError(f"the list {list_file} names no image")
    return rows


def _multi_hot(rows: list[Row], index: dict[str, int]) -> list[tuple[str, np.ndarray]]:
    out = []
    for row in rows:
        target = np.zeros(len(index), np.uint8)
        target[[index[name] for name in row.labels]] = 1
        out.append((str(row.path), target))
    return out


def _check_known(rows: list[Row], known: set[str], split: str) -> None:
    for row in rows:
        unknown = [name for name in row.labels if name not in known]
        if unknown:
            raise DatasetError(f"{row.where}: label {unknown[0]!r} of the {split} list is never in the "
                               "training list (a model cannot learn it)")


def collect_multilabel(spec, job_dir: Path, roots: list[Path] | None) -> MultiLabelPlan:
    """The plan of ``spec``'s lists: given val/test lists, else drawn from train by percent."""
    def path(value: str) -> Path:
        return job_dir / value  # an absolute path wins

    image_root = path(spec.image_root) if spec.image_root else None
    rows = {"train": read_rows(path(spec.train_list), image_root, roots)}
    for split in ("val", "test"):
        if getattr(spec, f"{split}_list"):
            rows[split] = read_rows(path(getattr(spec, f"{split}_list")), image_root, roots)
    drawn = split_off(rows["train"], 0 if "val" in rows else spec.val_percent,
                      0 if "test" in rows else spec.test_percent, spec.seed, salt=47)
    rows = {"train": drawn[0], "val": rows.get("val", drawn[1]), "test": rows.get("test", drawn[2])}
    classes = sorted({name for row in rows["train"] for name in row.labels})
    if not classes:
        raise DatasetError(f"no label in the training list {spec.train_list}")
    for split in ("val", "test"):
        _check_known(rows.get(split, []), set(classes), split)
    index = {name: i for i, name in enumerate(classes)}
    plan = MultiLabelPlan(classes, {split: _multi_hot(rows[split], index) for split in SPLITS if rows.get(split)})
    never = [name for name in classes if not any(name in row.labels for row in rows.get("val", []))]
    if rows.get("val") and never:
        plan.warnings.append(f"{len(never)} label(s) never in the validation split: {', '.join(never[:10])}")
    return plan
