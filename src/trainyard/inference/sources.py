"""Where classify-many reads images from, one item at a time (a 100,000-line list is never
held in memory): a list file of ``path [label]`` lines, a folder, or a dataset split.

A label is a class index or a class name of the model. In a folder, images inside a first-level
subfolder named like one of the model's classes carry that label (the layout of a dataset
folder); others are unlabelled. Hidden files are skipped; folder links are not followed, and
file links are followed only while they stay inside the folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainyard.datasets.sources import IMAGE_EXTENSIONS
from trainyard.datasets.storage import open_split


@dataclass
class Item:
    """One image to classify: a file (``path``) or a stored split image (``index``)."""

    name: str  # as shown and written to the CSV: the list's path, or the path inside the folder
    path: Path | None = None
    index: int | None = None
    label: int | None = None  # index into the model's classes, when known
    label_text: str = ""  # the label as given (kept even when it is not a class of the model)


def parse_label(text: str, classes: list[str]) -> int | None:
    """A class index given as a number or a name; None if it is neither."""
    if text in classes:
        return classes.index(text)
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 0 <= value < len(classes) else None


def parse_line(line: str, classes: list[str], exists: Callable[[str], bool] = lambda path: False) -> tuple[str, str]:
    """``path [label]`` -> (path, label text or ""). Paths may hold spaces: the last word is the
    label when it is a number or a class name, or when the line without it names a file that
    ``exists`` and the whole line does not (a label the model does not know)."""
    parts = line.rsplit(None, 1)
    if len(parts) == 2:
        if parts[1] in classes or parts[1].lstrip("-").isdigit():
            return parts[0], parts[1]
        if exists(parts[0]) and not exists(line):
            return parts[0], parts[1]
    return line, ""


def list_items(list_file: Path, classes: list[str], image_root: Path | None = None) -> Iterator[Item]:
    """The images of a list file; relative paths resolve against ``image_root`` (default: its folder)."""
    base = Path(image_root) if image_root else Path(list_file).parent
    with open(list_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, label = parse_line(line, classes, lambda p: (base / p).is_file())
            yield Item(name, path=base / name, label=parse_label(label, classes) if label else None,
                       label_text=label)


def count_list(list_file: Path) -> int:
    with open(list_file, encoding="utf-8", errors="replace") as f:
        return sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))


def _walk(root: Path) -> Iterator[Path]:
    """Image files below ``root`` in sorted order, lazily (one folder listing at a time)."""
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if name.startswith(".") or path.suffix.lower() not in IMAGE_EXTENSIONS:
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(real_root):
                continue
            yield path


def folder_items(root: Path, classes: list[str]) -> Iterator[Item]:
    """The images below ``root``, labelled by a first-level class folder when there is one."""
    root = Path(root)
    for path in _walk(root):
        rel = path.relative_to(root)
        top = rel.parts[0] if len(rel.parts) > 1 else ""
        label = classes.index(top) if top in classes else None
        yield Item(rel.as_posix(), path=path, label=label, label_text=top if label is not None else "")


def count_folder(root: Path) -> int:
    return sum(1 for _ in _walk(Path(root)))


def split_items(dataset_dir: Path, split: str, classes: list[str]) -> Iterator[Item]:
    """Every image of a stored split, with its label (dataset labels index the same classes)."""
    labels = np.asarray(open_split(Path(dataset_dir), split).labels)
    for i in range(len(labels)):
        label = int(labels[i])
        name = classes[label] if 0 <= label < len(classes) else str(label)
        yield Item(f"{split}/{i}", index=i, label=label if 0 <= label < len(classes) else None,
                   label_text=name)
