"""What the label parsers give back, and the class list that maps or drops names.

Every format's parser turns its files into ``Labels``: per image key (the image's path below
its folder without the extension, so ``a/b.png`` and ``a/b.txt`` match), the boxes in original
pixels (YOLO's are still normalised: ``normalised`` says so) with where each came from, and
the problems found (file and line named).

The class list (``--classes``): comma-separated entries; ``name`` keeps the class, ``name=new``
keeps it under the name ``new`` (several names may map to one, e.g. ``car,truck=vehicle,
van=vehicle``). Given a list, names not in it are dropped (and listed).

The class order, one rule for every format: the class list's targets in the order they first
appear; else a YOLO ``classes.txt``'s order (the names its boxes use); else the names the train
labels use, sorted (KITTI, VOC and COCO alike: COCO's category ids do not order the classes).

A box of a class the dataset does not have (a name the list drops, a YOLO index past
``classes.txt``, a COCO ``category_id`` missing from ``categories``) is dropped and counted in the
build's listing, one line a class; its image is kept, in every format.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from trainyard.core.errors import InvalidInput
from trainyard.datasets.sources import Skipped

LABEL_FORMATS = ("kitti", "yolo", "coco", "voc")


@dataclass(frozen=True)
class RawBox:
    """One box as its file gives it: a class name and x1, y1, x2, y2 (see ``Labels.normalised``)."""

    label: str
    box: tuple[float, float, float, float]
    where: str  # "labels/a.txt line 3": how a problem with this box is named
    # Set where the file names a class it does not define (a YOLO index, a COCO category id): why
    # the box is dropped, e.g. "category_id 99 is not one of labels.json's categories".
    unknown: str | None = None


def corners(values: tuple[float, ...]) -> tuple[float, float, float, float]:
    """x1, y1, x2, y2 of four numbers a reader checked (ValueError for any other count)."""
    x1, y1, x2, y2 = values
    return x1, y1, x2, y2


@dataclass
class Labels:
    """The boxes of each image key, and what could not be read."""

    boxes: dict[str, list[RawBox]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # image key -> its label file
    problems: list[Skipped] = field(default_factory=list)
    unreadable: set[str] = field(default_factory=set)  # keys whose labels are unknown: image left out
    notes: list[str] = field(default_factory=list)  # counts worth a line (DontCare, crowd boxes)
    names: list[str] = field(default_factory=list)  # the declared class order: YOLO's classes.txt
    normalised: bool = False  # YOLO: boxes in 0..1 of the image, not pixels
    # per-file formats: an image without a label file has no boxes; COCO: it is not labelled
    absent_means_empty: bool = True


def image_key(path: Path | PurePath, root: Path | PurePath) -> str:
    """The matching key of a file below ``root``: its relative path without the extension."""
    return PurePath(path).relative_to(root).with_suffix("").as_posix()


def parse_classes(value: str | Iterable[str] | None) -> dict[str, str] | None:
    """``--classes`` as {name in the labels: class name kept}, or None (keep every name)."""
    if value is None:
        return None
    entries = value.split(",") if isinstance(value, str) else list(value)
    mapping: dict[str, str] = {}
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        source, _, target = (part.strip() for part in entry.partition("="))
        target = target or source
        if not source or "=" in target:
            raise InvalidInput(f"class entry {entry!r} should be NAME or NAME=NEW_NAME")
        if source in mapping and mapping[source] != target:
            raise InvalidInput(f"class {source!r} is mapped twice ({mapping[source]!r}, {target!r})")
        mapping[source] = target
    if not mapping:
        raise InvalidInput("the class list is empty; give names separated by commas")
    return mapping


def class_order(mapping: dict[str, str] | None, declared: list[str], used: Iterable[str]) -> list[str]:
    """The dataset's classes (the module docstring's rule): the list's targets in order; else the
    ``declared`` order (classes.txt) of the names the boxes ``used``; else those names sorted."""
    if mapping is not None:
        return list(dict.fromkeys(mapping.values()))
    used = set(used)
    if not used:  # no box at all: the build says so; the declared names are all there is
        return list(dict.fromkeys(declared))
    return [name for name in dict.fromkeys(declared) if name in used] or sorted(used)
