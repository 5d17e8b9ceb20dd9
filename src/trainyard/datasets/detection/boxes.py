"""Check one image's boxes against its size and the class list: keep, clip, or drop and say why.

A box partly outside the image is clipped to it (and noted); one entirely outside, one with no
area (x2 <= x1 or y2 <= y1) or with a coordinate that is not a number is dropped and listed.
A class the list does not name, or one the file does not define (``RawBox.unknown``), is dropped
and counted per class (one listing line each, with the first place it appears), so filtering a
large set to a few classes does not flood the page; its image is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainyard.datasets.detection.labels import RawBox
from trainyard.datasets.sources import Skipped


@dataclass
class BoxReport:
    """What box checking found, across all images of a build."""

    skipped: list[Skipped] = field(default_factory=list)  # boxes dropped
    notes: list[Skipped] = field(default_factory=list)  # boxes kept but changed, images kept without labels
    unknown: dict[str, list] = field(default_factory=dict)  # class -> [count, first where]
    why: dict[str, str] = field(default_factory=dict)  # class -> why it is unknown, where the file says

    def unknown_listing(self) -> list[Skipped]:
        listing = []
        for name, (n, where) in sorted(self.unknown.items()):
            why = self.why.get(name) or f"class {name!r} is not one of the dataset's classes"
            listing.append(Skipped(where, f"{why}: {n} box{'es' * (n != 1)} dropped"))
        return listing

    def count_unknown(self, box: RawBox) -> None:
        entry = self.unknown.setdefault(box.label, [0, box.where])
        entry[0] += 1
        if box.unknown is not None:
            self.why.setdefault(box.label, box.unknown)


def _fmt(box: tuple[float, ...]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


def check_boxes(raw: list[RawBox], size: tuple[int, int], normalised: bool,
                mapping: dict[str, str] | None, index: dict[str, int],
                report: BoxReport) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (b, 4) float64 in original pixels and class indices (b,) of one image of ``size``.

    ``mapping`` (the class list) renames or drops names; ``index`` gives each kept name's index.
    """
    w, h = size
    boxes, labels = [], []
    for r in raw:
        name = mapping.get(r.label) if mapping is not None else r.label
        if r.unknown is not None or name is None or name not in index:
            report.count_unknown(r)
            continue
        x1, y1, x2, y2 = r.box
        if normalised:
            x1, y1, x2, y2 = x1 * w, y1 * h, x2 * w, y2 * h
        if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
            report.skipped.append(Skipped(r.where, f"box {_fmt(r.box)} has a coordinate that is not a number"))
            continue
        if x2 <= x1 or y2 <= y1:
            report.skipped.append(Skipped(r.where, f"box {_fmt((x1, y1, x2, y2))} has zero or negative area: dropped"))
            continue
        if x2 <= 0 or y2 <= 0 or x1 >= w or y1 >= h:
            report.skipped.append(Skipped(r.where, f"box {_fmt((x1, y1, x2, y2))} lies outside the "
                                          f"{w}x{h} image: dropped"))
            continue
        clipped = (max(0.0, x1), max(0.0, y1), min(float(w), x2), min(float(h), y2))
        if clipped != (x1, y1, x2, y2) and not _within_rounding(normalised, (x1, y1, x2, y2), clipped):
            report.notes.append(Skipped(r.where, f"box {_fmt((x1, y1, x2, y2))} clipped to the {w}x{h} "
                                        f"image: {_fmt(clipped)}"))
        boxes.append(clipped)
        labels.append(index[name])
    return np.asarray(boxes, np.float64).reshape(-1, 4), np.asarray(labels, np.int64)


def _within_rounding(normalised: bool, box: tuple[float, ...], clipped: tuple[float, ...]) -> bool:
    """YOLO's six-decimal coordinates overshoot an edge by a hair: not worth a note."""
    return normalised and max(abs(a - b) for a, b in zip(box, clipped, strict=True)) < 0.01
