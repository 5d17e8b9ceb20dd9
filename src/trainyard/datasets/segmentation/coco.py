"""COCO instance annotations as segmentation masks: ``train_labels`` (and ``val_labels``,
``test_labels``) a COCO .json whose ``images`` are matched by ``file_name`` in the split's image
folder, rasterised by pycocotools (coco_shapes.py).

The classes are ``background`` (index 0) and the categories in id order (the train file's; the
other splits' files must name the same). Each image's mask is painted from its annotations:
crowd regions (``iscrowd`` 1, many objects under one outline) first as 255 (ignore), then the
objects from the largest to the smallest, so a small object lying on a large one stays visible
and an object overrides the crowd it stands in. An annotation of an unknown image id is a report
line; one of an unknown category or with a malformed segmentation leaves its image out (its mask
would be wrong where the object is), with a report line naming the annotation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from PIL import Image

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.formats_other import MAX_COCO_BYTES
from trainyard.datasets.images import ImageError
from trainyard.datasets.segmentation.coco_shapes import MalformedShape, Shape, checked_shape, rasterise
from trainyard.datasets.segmentation.folders import SPLITS, by_key
from trainyard.datasets.segmentation.masks import IGNORE, Candidate, Found
from trainyard.datasets.segmentation.spec_rules import check_class_names
from trainyard.datasets.sources import Skipped

BACKGROUND = "background"


@dataclass(frozen=True)
class CocoImage:
    key: str  # file_name without its extension, as an image folder's keys are
    width: int
    height: int


@dataclass(frozen=True)
class CocoMask:
    """One image's regions (class index, or 255 for a crowd; checked shape), painted on read."""

    label: str  # "instances.json: a/b.jpg", for the report
    height: int
    width: int
    regions: tuple[tuple[int, Shape], ...]

    @property
    def name(self) -> str:
        return self.label

    def read(self) -> np.ndarray:
        limit = Image.MAX_IMAGE_PIXELS  # the file's size is untrusted: no mask bigger than an image
        if limit is not None and self.height * self.width > limit:
            raise ImageError(f"the COCO file gives {self.width}x{self.height}, over the limit of {limit} pixels")
        mask = np.zeros((self.height, self.width), np.uint8)
        drawn = [(index, rasterise(shape, self.height, self.width)) for index, shape in self.regions]
        # Crowds first (any object overrides them), then objects largest first (small ones on top).
        drawn.sort(key=lambda region: (region[0] != IGNORE, -int(region[1].sum())))
        for index, pixels in drawn:
            mask[pixels] = index
        return mask


@dataclass
class _File:
    path: Path
    categories: dict[int, str]
    images: dict[int, CocoImage]
    annotations: list[Any]


def read_coco(spec: Any, job_dir: Path) -> Found:
    """The COCO files' pairs; classes from the train file's categories."""
    files = {split: _load(job_dir / getattr(spec, f"{split}_labels")) for split in SPLITS
             if getattr(spec, f"{split}_folder") is not None}
    names = [BACKGROUND] + [name for _, name in sorted(files["train"].categories.items())]
    if spec.classes is not None and [c.strip() for c in spec.classes] != names:
        raise DatasetError(f"--classes must be the COCO file's: {', '.join(names)} (background, then the "
                           "categories in id order)")
    try:
        check_class_names(names)
    except ValueError as e:
        raise DatasetError(f"{files['train'].path}'s categories: {e}") from None
    found = Found(names, {})
    for split, file in files.items():
        if file.categories != files["train"].categories:
            raise DatasetError(f"{file.path} names other categories than the train file {files['train'].path}")
        images = by_key(job_dir / getattr(spec, f"{split}_folder"), found.walked, f"{split} image")
        found.splits[split] = _pairs(file, images, found)
    return found


def _load(path: Path) -> _File:
    if not path.is_file():
        raise DatasetError(f"COCO labels file not found: {path}")
    if path.stat().st_size > MAX_COCO_BYTES:
        raise DatasetError(f"COCO labels file {path} is over {MAX_COCO_BYTES >> 30} GB")
    try:
        doc = json.loads(path.read_bytes())
        categories = {int(c["id"]): str(c["name"]).strip() for c in doc["categories"]}
        images = {int(i["id"]): CocoImage(PurePosixPath(str(i["file_name"])).with_suffix("").as_posix(),
                                          int(i["width"]), int(i["height"])) for i in doc["images"]}
        annotations = doc.get("annotations", [])
        if not isinstance(annotations, list):
            raise TypeError("annotations is not a list")
        if any(min(i.width, i.height) < 1 for i in images.values()):
            raise ValueError("an image of no width or height")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise DatasetError(f"{path} is not a COCO file (images with id, file_name, width, height; categories "
                           f"with id, name; annotations): {type(e).__name__}: {e}") from None
    return _File(path, categories, images, annotations)


def _pairs(file: _File, images: dict[str, Path], found: Found) -> list[Candidate]:
    index = {cid: i for i, cid in enumerate(sorted(file.categories), 1)}
    regions: dict[int, list[tuple[int, Shape]]] = {image_id: [] for image_id in file.images}
    broken: dict[int, str] = {}  # image id -> why its mask cannot be made
    for number, ann in enumerate(file.annotations, 1):
        name = f"annotation {str(ann.get('id', number))[:40] if isinstance(ann, dict) else number}"
        try:
            image_id, region = _region(ann, file, index)
        except _Unplaced as e:
            found.skipped.append(Skipped(f"{file.path} {name}", f"annotation left out: {e}"))
            continue
        except _Broken as e:  # the first of an image's bad annotations names why it is left out
            broken.setdefault(e.image_id, f"{name} in {file.path.name}: {e}")
            continue
        regions[image_id].append(region)
    pairs = []
    listed = set()
    for image_id, image in sorted(file.images.items(), key=lambda item: item[1].key):
        if image.key in listed:  # a second entry for one file: which annotations are its own?
            found.skipped.append(Skipped(f"{file.path}: {image.key}", f"listed twice in {file.path.name}: "
                                         "the second entry is left out"))
            continue
        listed.add(image.key)
        if image.key not in images:
            found.skipped.append(Skipped(f"{file.path}: {image.key}", "listed in the COCO file, but no such "
                                         "image in the folder"))
        elif image_id in broken:
            found.skipped.append(Skipped(str(images[image.key]), f"{broken[image_id]}; its image is left out"))
        else:
            label = f"{file.path.name}: {image.key}"
            pairs.append(Candidate(images[image.key], CocoMask(label, image.height, image.width,
                                                               tuple(regions[image_id]))))
    for key in sorted(set(images) - listed):
        found.skipped.append(Skipped(str(images[key]), f"no mask: not among {file.path.name}'s images"))
    return pairs


class _Unplaced(ValueError):
    """An annotation of no known image: reported, and no image is left out for it."""


class _Broken(ValueError):
    """An annotation of a known image that cannot be painted: its image is left out."""

    def __init__(self, image_id: int, why: str):
        super().__init__(why)
        self.image_id = image_id


def _region(ann: object, file: _File, index: dict[int, int]) -> tuple[int, tuple[int, Shape]]:
    """(image id, (class index or 255, checked shape)) of one annotation."""
    if not isinstance(ann, dict):
        raise _Unplaced(f"not an object: {str(ann)[:60]!r}")
    try:
        image_id = int(ann["image_id"])
    except (KeyError, TypeError, ValueError):
        raise _Unplaced("needs a whole-number image_id") from None
    if image_id not in file.images:
        raise _Unplaced(f"image_id {image_id} is not one of {file.path.name}'s images")
    image = file.images[image_id]
    try:
        category = int(ann["category_id"])
    except (KeyError, TypeError, ValueError):
        raise _Broken(image_id, "needs a whole-number category_id") from None
    if category not in index:
        raise _Broken(image_id, f"category_id {category} is not one of {file.path.name}'s categories")
    try:
        shape = checked_shape(ann.get("segmentation"), image.height, image.width)
    except MalformedShape as e:
        raise _Broken(image_id, f"malformed segmentation: {e}") from None
    return image_id, (IGNORE if ann.get("iscrowd") else index[category], shape)
