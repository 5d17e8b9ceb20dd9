"""Find labelled images: class folders (one subfolder per class) or DIGITS text lists.

Nothing here opens an image; unreadable files are found later, when the build decodes them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IMAGE_EXTENSIONS = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif", ".ppm", ".pgm"}
)


@dataclass
class Sample:
    """One labelled image; ``label`` indexes the class list it was found with."""

    path: Path
    label: int


NOT_AN_IMAGE = "not an image"  # collect.py lists these apart from the images that could not be read
MAX_IGNORED_LISTED = 1000  # names of ignored files kept in info.json; the count is always whole


@dataclass
class Skipped:
    """Something left out of a dataset, and why (reported in the dataset's info.json)."""

    path: str
    reason: str


def set_ignored_apart(skipped: list[Skipped]) -> tuple[list[Skipped], list[str]]:
    """(what was skipped, the files ignored for not being image files): a README beside the
    images is no fault of the images, so it is named apart from a corrupt picture."""
    ignored = [s.path for s in skipped if s.reason == NOT_AN_IMAGE]
    return [s for s in skipped if s.reason != NOT_AN_IMAGE], ignored


def ignored_line(ignored: list[str], count: int) -> str:
    """One line for a log or a terminal: how many files were ignored, the first few by name."""
    shown = ", ".join(ignored[:5]) + (f" and {count - 5} more" if count > 5 else "")
    return f"{count} file{'s' * (count != 1)} ignored, not image files: {shown}"


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _walk_images(folder: Path, root: Path, skipped: list[Skipped] | None) -> list[Path]:
    """Image files below ``folder``, following links only while they stay inside ``root``.

    ``root`` must be resolved. Links that point outside it are reported in ``skipped`` (when
    given); each real folder is visited once, so link loops end.
    """
    return sorted(iter_images(folder, root, skipped))


def iter_images(folder: Path, root: Path, skipped: list[Skipped] | None = None) -> Iterator[Path]:
    """`_walk_images` lazily, in walk order: what a dataset build would read, for a preview."""
    seen: set[Path] = set()
    stack = [folder]
    while stack:
        current = stack.pop()
        real = current.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as e:
            if skipped is not None:
                skipped.append(Skipped(str(current), f"cannot list folder: {e.strerror or e}"))
            continue
        subfolders = []
        for entry in entries:
            if _hidden(entry.name):
                continue
            path = Path(entry.path)
            if entry.is_symlink() and not _inside(path.resolve(), root):
                if skipped is not None:
                    skipped.append(Skipped(str(path), "symbolic link to outside the folder"))
                continue
            if entry.is_dir():
                subfolders.append(path)
            elif entry.is_file() and path.suffix.lower() in IMAGE_EXTENSIONS:
                yield path
            elif entry.is_file() and skipped is not None:
                skipped.append(Skipped(str(path), NOT_AN_IMAGE))
        stack.extend(reversed(subfolders))  # visited in name order, like os.walk


def _class_dirs(root: Path, skipped: list[Skipped] | None) -> dict[str, Path]:
    """The usable class subfolders of ``root`` by name."""
    if not root.is_dir():
        raise FileNotFoundError(f"folder not found: {root}")
    real_root = root.resolve()
    dirs: dict[str, Path] = {}
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        path = Path(entry.path)
        if _hidden(entry.name) or not entry.is_dir():
            continue
        if entry.is_symlink() and not _inside(path.resolve(), real_root):
            if skipped is not None:
                skipped.append(Skipped(str(path), "symbolic link to outside the folder"))
            continue
        dirs[entry.name] = path
    return dirs


def scan_class_folders(
    root: Path, skipped: list[Skipped] | None = None
) -> tuple[list[str], list[Sample]]:
    """Return (class names sorted, samples) for a folder holding one subfolder per class.

    Each class folder is searched recursively for image files. Hidden files and folders are
    ignored; symbolic links resolving outside ``root`` are not followed (and are added to
    ``skipped`` when a list is given). Raises FileNotFoundError if ``root`` is not a folder.
    """
    root = Path(root)
    dirs = _class_dirs(root, skipped)
    classes = sorted(dirs)
    real_root = root.resolve()
    samples = [
        Sample(path, label)
        for label, name in enumerate(classes)
        for path in _walk_images(dirs[name], real_root, skipped)
    ]
    return classes, samples


def scan_with_classes(
    root: Path, classes: list[str], skipped: list[Skipped] | None = None
) -> list[Sample]:
    """Samples of a val/test folder, labelled with the training set's ``classes``.

    Subfolders whose name is not one of ``classes`` are left out and reported in ``skipped``.
    """
    root = Path(root)
    dirs = _class_dirs(root, skipped)
    index = {name: i for i, name in enumerate(classes)}
    real_root = root.resolve()
    samples: list[Sample] = []
    for name, folder in dirs.items():
        if name not in index:
            if skipped is not None:
                skipped.append(Skipped(str(folder), f"class {name!r} is not in the training set"))
            continue
        samples += [Sample(p, index[name]) for p in _walk_images(folder, real_root, skipped)]
    return samples


def read_labels(labels_file: Path) -> list[str]:
    """Class names, one a line, in label order; blank lines ignored.

    Raises ValueError if there are fewer than two names or a name repeats.
    """
    try:
        text = Path(labels_file).read_text(encoding="utf-8-sig")  # -sig: drop a BOM
    except FileNotFoundError:
        raise ValueError(f"labels file not found: {labels_file}") from None
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if len(names) < 2:
        raise ValueError(f"labels file {labels_file} must name at least two classes, it has {len(names)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"labels file {labels_file} repeats class names: {', '.join(repeated)}")
    return names


def parse_list(
    list_file: Path, classes: list[str], image_root: Path | None = None
) -> tuple[list[Sample], list[Skipped]]:
    """Parse a DIGITS list: ``path label`` a line, label an index into ``classes``.

    Paths may contain spaces (the label is after the last whitespace). Relative paths resolve
    against ``image_root``, else the list file's folder. Lines that do not parse are returned as
    Skipped with a reason starting "line N:" (N counted from 1); blank lines are ignored.
    """
    list_file = Path(list_file)
    base = Path(image_root) if image_root is not None else list_file.parent
    samples: list[Sample] = []
    skipped: list[Skipped] = []
    with open(list_file, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.rsplit(None, 1)
            if len(parts) != 2:
                skipped.append(Skipped(line, f"line {number}: expected 'path label'"))
                continue
            raw_path, raw_label = parts
            try:
                label = int(raw_label)
            except ValueError:
                skipped.append(Skipped(raw_path, f"line {number}: label {raw_label!r} is not a number"))
                continue
            if not 0 <= label < len(classes):
                reason = f"line {number}: label {label} is outside 0..{len(classes) - 1}"
                skipped.append(Skipped(raw_path, reason))
                continue
            samples.append(Sample(base / raw_path, label))  # an absolute raw_path wins
    return samples, skipped
