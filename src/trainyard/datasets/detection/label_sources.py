"""Read a labels folder or file in its format, told by ``labels_format`` or by what is there.

Told by the files: a ``.json`` file is COCO; a folder of ``.xml`` files is VOC; a folder of
``.txt`` files is YOLO when it holds a ``classes.txt`` or its first non-empty line is five
numbers, else KITTI.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.formats_other import LabelFileError, parse_coco, parse_voc
from trainyard.datasets.detection.formats_text import label_files, parse_kitti, parse_yolo, yolo_names
from trainyard.datasets.detection.labels import Labels


def detect_format(path: Path) -> str:
    """The label format of ``path`` (see the module docstring)."""
    if path.is_file():
        if path.suffix.lower() == ".json":
            return "coco"
        raise DatasetError(f"labels {path} is a file but not a COCO .json; give a folder of label files")
    if not path.is_dir():
        raise DatasetError(f"labels not found: {path}")
    if next(label_files(path, ".xml"), None) is not None:
        return "voc"
    if (path / "classes.txt").is_file():
        return "yolo"
    for txt in label_files(path, ".txt"):
        for line in txt.read_text(encoding="utf-8-sig", errors="replace").splitlines():
            if line.strip():
                fields = line.split()
                return "yolo" if len(fields) == 5 and _numbers(fields) else "kitti"
    raise DatasetError(f"no label files in {path} (looked for .txt, .xml; a COCO file is one .json)")


def _numbers(fields: list[str]) -> bool:
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def read_labels(path: Path, fmt: str | None, mapping: dict[str, str] | None) -> tuple[str, Labels]:
    """(format, labels) of a labels folder or COCO file."""
    fmt = fmt or detect_format(path)
    if fmt == "coco":
        try:
            return fmt, parse_coco(path)
        except LabelFileError as e:
            raise DatasetError(str(e)) from None
    if not path.is_dir():
        raise DatasetError(f"{fmt} labels folder not found: {path}")
    if fmt == "voc":
        return fmt, parse_voc(path)
    if fmt == "kitti":
        return fmt, parse_kitti(path)
    names = yolo_names(path, list(mapping) if mapping is not None else None)
    if not names:
        raise DatasetError(f"YOLO labels need class names: a classes.txt in {path} (one name a "
                           "line, line 1 is class 0) or the class list (--classes)")
    return fmt, parse_yolo(path, names)
