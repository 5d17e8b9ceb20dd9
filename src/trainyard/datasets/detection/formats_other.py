"""Pascal VOC XML files (one per image) and a COCO JSON file (one for all images).

VOC: ``<object><name>`` with ``<bndbox>`` xmin ymin xmax ymax in pixels, read as given (the
same convention as torchvision's VOC reader). The XML is untrusted: it is parsed by defusedxml
with DTDs forbidden, so a DTD or entity declaration is refused whatever the file's encoding
(an ASCII pattern missed a UTF-16 file, whose entities expanded into a 300,003-character class
name), and a class name over `MAX_CLASS_NAME` characters leaves its file out. COCO: ``images`` (matched by
``file_name``), ``annotations`` with ``bbox`` [x, y, width, height] and ``categories``; crowd
annotations (``iscrowd`` 1, a region of many objects) are dropped and counted.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path, PurePosixPath

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as defused_fromstring

from trainyard.datasets.detection.formats_text import MAX_LABEL_BYTES, label_files
from trainyard.datasets.detection.labels import Labels, RawBox, corners, image_key
from trainyard.datasets.sources import Skipped

MAX_COCO_BYTES = 2 << 30
MAX_CLASS_NAME = 200  # characters: a class name is a label shown on pages, not a payload


class LabelFileError(ValueError):
    """A label file that cannot be used at all."""


def parse_voc(folder: Path) -> Labels:
    """Read every ``.xml`` below ``folder`` as a Pascal VOC annotation."""
    out = Labels()
    for path in label_files(folder, ".xml"):
        key = image_key(path, folder)
        try:
            out.boxes[key] = _voc_objects(path)
            out.sources[key] = str(path)
        except LabelFileError as e:
            out.problems.append(Skipped(str(path), f"{e}; its image is left out"))
            out.unreadable.add(key)
    return out


def _voc_objects(path: Path) -> list[RawBox]:
    data = path.read_bytes()
    if len(data) > MAX_LABEL_BYTES:
        raise LabelFileError(f"over {MAX_LABEL_BYTES >> 20} MB: not an annotation file")
    try:
        root = defused_fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise LabelFileError("XML with a DTD or entity declaration refused (untrusted input)") from None
    except (ET.ParseError, ValueError) as e:  # ValueError: an encoding expat does not read
        raise LabelFileError(f"not valid XML: {e}") from None
    boxes = []
    for number, obj in enumerate(root.iter("object"), 1):
        name = (obj.findtext("name") or "").strip()
        bndbox = obj.find("bndbox")
        fields = [bndbox.findtext(tag) if bndbox is not None else None for tag in ("xmin", "ymin", "xmax", "ymax")]
        try:
            values = tuple(float((f or "").strip()) for f in fields)
        except ValueError:
            values = ()
        if not name or len(values) != 4 or not all(math.isfinite(v) for v in values):
            raise LabelFileError(f"object {number}: needs a <name> and <bndbox> with numeric "
                                 "xmin, ymin, xmax, ymax")
        _bounded(name, f"object {number}")
        boxes.append(RawBox(name, corners(values), f"{path} object {number}"))
    return boxes


def _bounded(name: str, where: str) -> str:
    """``name``, or LabelFileError when it is longer than any class name (never stored)."""
    if len(name) > MAX_CLASS_NAME:
        raise LabelFileError(f"{where}: a class name of {len(name):,} characters (at most "
                             f"{MAX_CLASS_NAME}) refused")
    return name


def parse_coco(path: Path) -> Labels:
    """Read one COCO JSON file; image keys are each ``file_name`` without its extension."""
    if not path.is_file():
        raise LabelFileError(f"COCO labels file not found: {path}")
    if path.stat().st_size > MAX_COCO_BYTES:
        raise LabelFileError(f"COCO labels file {path} is over {MAX_COCO_BYTES >> 30} GB")
    try:
        doc = json.loads(path.read_bytes())
        images, annotations, categories = doc["images"], doc.get("annotations", []), doc["categories"]
        names = {int(c["id"]): str(c["name"]) for c in categories}
        files = {int(i["id"]): PurePosixPath(str(i["file_name"])).with_suffix("").as_posix() for i in images}
    except (ValueError, KeyError, TypeError) as e:
        raise LabelFileError(f"{path} is not a COCO file (images, annotations, categories): "
                             f"{type(e).__name__}: {e}") from None
    for k, name in names.items():
        _bounded(name, f"{path} category {k}")
    out = Labels(absent_means_empty=False)  # the class order is the names' (labels.py): ids do not set it
    for key in files.values():
        out.boxes.setdefault(key, [])
        out.sources[key] = str(path)
    crowd = 0
    for number, ann in enumerate(annotations, 1):
        where = f"{path} annotation {ann.get('id', number) if isinstance(ann, dict) else number}"
        try:
            key, box, crowded = _annotation(ann, files, names, path.name, where)
        except LabelFileError as e:
            image = _image_of(ann, files)
            if image is not None:  # its labels are not fully known: leave the image out
                out.unreadable.add(image)
            tail = "; its image is left out" if image is not None else ""
            out.problems.append(Skipped(where, f"annotation left out: {e}{tail}"))
            continue
        crowd += crowded
        if not crowded:
            out.boxes[key].append(box)
    if crowd:
        out.notes.append(f"{crowd} crowd annotation{'s' * (crowd != 1)} (iscrowd) dropped")
    return out


def _annotation(ann: object, files: dict[int, str], names: dict[int, str], file: str,
                where: str) -> tuple[str, RawBox, bool]:
    """(image key, box, whether it is a crowd region) of one annotation; LabelFileError saying
    what is wrong. A ``category_id`` the file does not define gives a box marked unknown (dropped
    and counted by the build, its image kept), named with the id and the file."""
    if not isinstance(ann, dict):
        raise LabelFileError(f"not an object: {str(ann)[:60]!r}")
    try:
        image_id, category = int(ann["image_id"]), int(ann["category_id"])
        x, y, w, h = (float(v) for v in ann["bbox"])
    except KeyError as e:
        raise LabelFileError(f"needs image_id, category_id and bbox [x, y, w, h]: no {e}") from None
    except (TypeError, ValueError) as e:
        raise LabelFileError(f"image_id and category_id must be whole numbers and bbox [x, y, w, h] "
                             f"four numbers ({e})") from None
    if image_id not in files:
        raise LabelFileError(f"image_id {image_id} is not one of {file}'s images")
    box = (x, y, x + w, y + h)
    if category not in names:
        why = f"category_id {category} is not one of {file}'s categories ({len(names)} defined)"
        return files[image_id], RawBox(f"category_id {category}", box, where, unknown=why), bool(ann.get("iscrowd"))
    return files[image_id], RawBox(names[category], box, where), bool(ann.get("iscrowd"))


def _image_of(ann: object, files: dict[int, str]) -> str | None:
    """The image key an annotation names, if it names a known image at all."""
    if not isinstance(ann, dict):
        return None
    try:
        return files.get(int(ann["image_id"]))
    except (KeyError, TypeError, ValueError):
        return None
