"""The dataset spec's rules for a segmentation dataset (the fields live on datasets/spec.py's
DatasetSpec): images with their masks in one of the mask formats below, a squash resize (masks
resized with nearest neighbour, kept aligned), no lists, archives or append. Validation without
numpy or Pillow: the readers of the formats (formats.py) import those, the rules here do not.

The mask formats, each a reader in formats.py under the same name:

- ``index``: a folder of 8-bit index (or palette) PNGs per split, named by their image's stem;
- ``colors``: a folder of RGB PNGs per split with a colour -> class table (``mask_colors``);
- ``voc``: a Pascal VOC root (``train_folder``): JPEGImages/, SegmentationClass/, ImageSets/;
- ``coco``: a COCO instances .json per split (``train_labels``) of polygons and RLE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEGMENTATION_RESIZE = ("squash",)
SEGMENTATION_FIELDS = ("mask_colors",)  # fields no other task takes
_NOT_FOR_SEGMENTATION = ("train_list", "val_list", "test_list", "labels_file", "train_archive", "val_archive",
                         "parent_dir")
MAX_CLASSES = 255  # index 255 means "ignore" in a mask
MAX_NAME = 200  # characters: a class name is a label on pages, and a table or COCO file gives it


@dataclass(frozen=True)
class FormatRules:
    """What a mask format needs from the spec."""

    labels: bool  # each split's images come with train_labels / val_labels / test_labels
    classes: bool  # the class names must be given: the masks hold bare indices
    folders: bool  # val_folder / test_folder may be given (VOC's splits come from its lists)


MASK_FORMATS: dict[str, FormatRules] = {
    "index": FormatRules(labels=True, classes=True, folders=True),
    "colors": FormatRules(labels=True, classes=False, folders=True),  # the classes: the table's names
    "voc": FormatRules(labels=False, classes=False, folders=False),  # the 21 VOC classes by default
    "coco": FormatRules(labels=True, classes=False, folders=True),  # the json's categories
}
TOLD_FORMATS = ("voc", "coco")  # the ones --labels-format names; index and colors are told by the input


def mask_format(spec: Any) -> str:
    """The mask format of a segmentation spec: ``labels_format`` when given, else told by the
    input (a .json of labels: COCO; a colour table given: colours; else index PNGs)."""
    if spec.labels_format is not None:
        return str(spec.labels_format)
    if str(spec.train_labels or "").lower().endswith(".json"):
        return "coco"
    return "colors" if spec.mask_colors is not None else "index"


def check_segmentation(spec: Any) -> None:
    """Raise ValueError (pydantic reports it) for a segmentation spec that cannot be built."""
    if spec.labels_format is not None and spec.labels_format not in TOLD_FORMATS:
        raise ValueError(f"labels_format {spec.labels_format!r} is not a segmentation format; valid: "
                         f"{', '.join(TOLD_FORMATS)} (index-PNG masks are the default; colour masks "
                         "are told by mask_colors)")
    fmt = mask_format(spec)
    rules = MASK_FORMATS[fmt]
    if spec.mask_colors is not None and fmt != "colors":
        raise ValueError(f"mask_colors is for colour-mask folders, not the {fmt} format")
    _check_sources(spec, fmt, rules)
    if spec.resize not in SEGMENTATION_RESIZE:
        raise ValueError(f"resize {spec.resize!r} is not a segmentation resize; valid: "
                         f"{', '.join(SEGMENTATION_RESIZE)}")
    if rules.classes and (not spec.classes or len(spec.classes) < 2):
        raise ValueError("a segmentation dataset needs its class names, mask index order, at least two "
                         "(--classes background,cat,dog)")
    if spec.classes is not None:
        check_class_names([c.strip() for c in spec.classes])


def check_class_names(names: list[str]) -> None:
    """ValueError unless ``names`` are 2 to 255 distinct, non-empty class names (also used on the
    names a colour table or a COCO file gives)."""
    if len(names) < 2:
        raise ValueError(f"a segmentation dataset needs at least two classes, got {len(names)}")
    if any(not n or "=" in n for n in names) or len(set(names)) != len(names):
        raise ValueError("segmentation classes must be distinct, non-empty names (no NAME=NEW)")
    if any(len(n) > MAX_NAME for n in names):
        raise ValueError(f"a class name of over {MAX_NAME} characters refused")
    if len(names) > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} segmentation classes (mask index 255 means ignore)")


def _check_sources(spec: Any, fmt: str, rules: FormatRules) -> None:
    if spec.train_folder is None:
        raise ValueError("a segmentation dataset needs train_folder (images, or a Pascal VOC root)")
    if rules.labels and spec.train_labels is None:
        raise ValueError(f"a segmentation dataset of {fmt} masks needs train_labels "
                         "(a mask folder, or a COCO .json)")
    given = [name for name in _NOT_FOR_SEGMENTATION if getattr(spec, name) is not None]
    if not rules.labels:
        given += [f"{split}_labels" for split in ("train", "val", "test") if getattr(spec, f"{split}_labels")]
    if not rules.folders:
        given += [f"{split}_folder" for split in ("val", "test") if getattr(spec, f"{split}_folder")]
    if given:
        raise ValueError(f"{', '.join(given)} cannot be used for a segmentation dataset of {fmt} masks "
                         "(give image folders with train_labels / val_labels, or a VOC root as train_folder)")
    for split in ("val", "test"):
        if (getattr(spec, f"{split}_folder") is None) != (getattr(spec, f"{split}_labels") is None):
            raise ValueError(f"give {split}_folder and {split}_labels together")
