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
from trainyard.datasets.detection.labels import Labels, RawBox, image_key
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
        boxes.append(RawBox(name, values, f"{path} object {number}"))  # type: ignore[arg-type]
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
    out = Labels(names=[_bounded(names[k], f"{path} category {k}") for k in sorted(names)],
                 absent_means_empty=False)
    for key in files.values():
        out.boxes.setdefault(key, [])
        out.sources[key] = str(path)
    crowd = 0
    for number, ann in enumerate(annotations, 1):
        where = f"{path} annotation {ann.get('id', number) if isinstance(ann, dict) else number}"
        try:
            key, name = files[int(ann["image_id"])], names[int(ann["category_id"])]
            x, y, w, h = (float(v) for v in ann["bbox"])
        except (KeyError, TypeError, ValueError) as e:
            image = _image_of(ann, files)
            if image is not None:  # its labels are not fully known: leave the image out
                out.unreadable.add(image)
            out.problems.append(Skipped(where, f"annotation left out: needs a known image_id, a known "
                                f"category_id and a bbox [x, y, w, h] ({type(e).__name__}: {e})"
                                f"{'; its image is left out' if image is not None else ''}"))
            continue
        if ann.get("iscrowd"):
            crowd += 1
            continue
        out.boxes[key].append(RawBox(name, (x, y, x + w, y + h), where))
    if crowd:
        out.notes.append(f"{crowd} crowd annotation{'s' * (crowd != 1)} (iscrowd) dropped")
    return out


def _image_of(ann: object, files: dict[int, str]) -> str | None:
    """The image key an annotation names, if it names a known image at all."""
    try:
        return files.get(int(ann["image_id"]))  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return None
