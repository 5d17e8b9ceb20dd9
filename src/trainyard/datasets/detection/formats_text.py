"""Per-image text label files: KITTI (DIGITS's and TAO's) and YOLO (Ultralytics's).

KITTI, one object a line: ``class truncated occluded alpha x1 y1 x2 y2 [h w l x y z ry [score]]``
in pixels; DIGITS and TAO read the first eight fields, so eight or more are accepted.
``DontCare`` regions are dropped (counted in a note). YOLO, one object a line:
``class_index cx cy w h`` normalised to 0..1, the class names from ``classes.txt`` in the
labels folder or from the class list. A line that does not parse is named with its file and
line number, and that image is left out: its labels are not known.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from trainyard.datasets.detection.labels import Labels, RawBox, corners, image_key
from trainyard.datasets.sources import Skipped

DONT_CARE = "dontcare"
KITTI_MIN_FIELDS = 8
MAX_LABEL_BYTES = 16 << 20  # one image's label file: anything larger is not a label file


def label_files(folder: Path, suffix: str) -> Iterator[Path]:
    """Files ending in ``suffix`` below ``folder``, sorted: not hidden, linked folders not
    entered, linked files only when they point inside ``folder``."""
    root = folder.resolve()
    found = []
    for current, dirs, files in os.walk(folder):  # os.walk does not follow folder links
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith(".") or not name.endswith(suffix):
                continue
            path = Path(current, name)
            if not path.is_symlink() or path.resolve().is_relative_to(root):
                found.append(path)
    yield from sorted(found)


def _read_lines(path: Path, out: Labels, key: str) -> list[str] | None:
    try:
        if path.stat().st_size > MAX_LABEL_BYTES:
            raise ValueError(f"over {MAX_LABEL_BYTES >> 20} MB: not a label file")
        return path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError, ValueError) as e:
        out.problems.append(Skipped(str(path), f"cannot read label file: {e}; its image is left out"))
        out.unreadable.add(key)
        return None


def _floats(fields: list[str]) -> tuple[float, ...] | None:
    try:
        values = tuple(float(f) for f in fields)
    except ValueError:
        return None
    return values if all(math.isfinite(v) for v in values) else None


def _bad_line(out: Labels, path: Path, key: str, number: int, why: str) -> None:
    out.problems.append(Skipped(str(path), f"line {number}: {why}; its image is left out"))
    out.unreadable.add(key)


def _label_lines(folder: Path, out: Labels, skip: Callable[[Path], bool] = lambda path: False
                 ) -> Iterator[tuple[Path, str, int, str, list[str]]]:
    """(file, image key, line number, line, its fields) of every non-blank line of the ``.txt``
    label files below ``folder``; an unreadable file is listed in ``out`` and skipped, and each
    readable one is recorded as its image's source (with no boxes yet: an empty file is an image
    with none)."""
    for path in label_files(folder, ".txt"):
        if skip(path):
            continue
        key = image_key(path, folder)
        lines = _read_lines(path, out, key)
        if lines is None:
            continue
        out.sources[key] = str(path)
        out.boxes.setdefault(key, [])
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if fields:
                yield path, key, number, line, fields


def parse_kitti(folder: Path) -> Labels:
    """Read every ``.txt`` below ``folder`` as a KITTI label file."""
    out = Labels()
    dont_care = 0
    for path, key, number, _line, fields in _label_lines(folder, out):
        if len(fields) < KITTI_MIN_FIELDS:
            _bad_line(out, path, key, number, f"{len(fields)} fields, KITTI needs at least "
                      f"{KITTI_MIN_FIELDS} (class truncated occluded alpha x1 y1 x2 y2)")
            continue
        values = _floats(fields[4:8])
        if values is None:
            _bad_line(out, path, key, number, f"x1 y1 x2 y2 should be numbers, got {' '.join(fields[4:8])!r}")
            continue
        if fields[0].lower() == DONT_CARE:
            dont_care += 1
            continue
        out.boxes[key].append(RawBox(fields[0], corners(values), f"{path} line {number}"))
    if dont_care:
        out.notes.append(f"{dont_care} DontCare region{'s' * (dont_care != 1)} dropped (KITTI's "
                         "'ignore this area', not an object)")
    return out


def yolo_names(folder: Path, class_list: list[str] | None) -> list[str] | None:
    """YOLO's index -> name list: ``classes.txt`` in the labels folder, else the class list."""
    names_file = folder / "classes.txt"
    if names_file.is_file():
        return [n.strip() for n in names_file.read_text(encoding="utf-8-sig").splitlines() if n.strip()]
    return class_list


def parse_yolo(folder: Path, names: list[str]) -> Labels:
    """Read every ``.txt`` below ``folder`` (but classes.txt) as a YOLO label file."""
    out = Labels(names=list(names), normalised=True)
    class_list = lambda path: path.name == "classes.txt" and path.parent == folder  # noqa: E731
    for path, key, number, line, fields in _label_lines(folder, out, skip=class_list):
        values = _floats(fields) if len(fields) == 5 else None
        if values is None:
            _bad_line(out, path, key, number, f"expected 'class cx cy w h' (5 numbers), got {line.strip()[:80]!r}")
            continue
        index, cx, cy, w, h = values
        if index != int(index):
            _bad_line(out, path, key, number, f"class index {fields[0]} is not a whole number")
            continue
        box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        where = f"{path} line {number}"
        if 0 <= index < len(names):
            out.boxes[key].append(RawBox(names[int(index)], box, where))
        else:  # a class the names do not define: the box is dropped and counted, the image kept
            why = f"class index {int(index)} is not one of 0..{len(names) - 1} ({len(names)} class names)"
            out.boxes[key].append(RawBox(f"index {int(index)}", box, where, unknown=why))
    return out
