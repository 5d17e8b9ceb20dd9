"""The Pascal VOC segmentation layout: ``train_folder`` is the VOC root (``VOCdevkit/VOC2012``).

``JPEGImages/`` holds the images, ``SegmentationClass/`` their palette PNGs (read as indices: 0
background, 1..20 the classes, 255 the objects' borders, ignored), and
``ImageSets/Segmentation/{train,val}.txt`` the ids of each split. Without ``train.txt`` every
mask that ``val.txt`` does not list is a training pair; without ``val.txt`` val is drawn from
train by ``val_percent``. (VOC's ``test.txt`` images have no masks, so test is drawn by
``test_percent`` too.) Ids are matched against the files found below the root, so an id such
as ``../x`` names nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.segmentation.folders import by_key
from trainyard.datasets.segmentation.masks import Candidate, Found, IndexMask
from trainyard.datasets.sources import Skipped

VOC_CLASSES = ["background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair",
               "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
               "train", "tvmonitor"]
MAX_LIST_BYTES = 64 << 20  # VOC's lists are some 100 kB: a bigger file is not a list of ids


def read_voc(spec: Any, job_dir: Path) -> Found:
    """The VOC root's pairs, split by its lists; the 21 VOC classes unless ``--classes`` is given."""
    root = job_dir / spec.train_folder
    if not root.is_dir():
        raise DatasetError(f"VOC root not found: {root}")
    found = Found([c.strip() for c in spec.classes] if spec.classes else list(VOC_CLASSES), {})
    images = by_key(root / "JPEGImages", found.walked, "VOC JPEGImages")
    masks = by_key(root / "SegmentationClass", None, "VOC SegmentationClass")
    lists = root / "ImageSets" / "Segmentation"
    where = {split: f"{split}.txt" for split in ("train", "val") if (lists / f"{split}.txt").is_file()}
    ids = {split: _ids(lists / name) for split, name in where.items()}
    if "train" not in ids:  # no list of its own: every mask that val does not list
        val = set(ids.get("val", []))
        ids["train"] = [key for key in sorted(masks) if key not in val]
    for split in ("train", "val"):
        if split in ids:
            found.splits[split] = _pairs(ids[split], images, masks, found, where.get(split, "SegmentationClass"))
    return found


def _ids(path: Path) -> list[str]:
    if path.stat().st_size > MAX_LIST_BYTES:
        raise DatasetError(f"{path} is over {MAX_LIST_BYTES >> 20} MB: not a list of image ids")
    # A line is an id; trainval-style lines "id 1" (the per-class lists) keep their first word.
    return list(dict.fromkeys(line.split()[0] for line in path.read_text(errors="replace").splitlines()
                              if line.strip()))


def _pairs(listed: list[str], images: dict[str, Path], masks: dict[str, Path], found: Found,
           where: str) -> list[Candidate]:
    pairs = []
    for key in listed:
        if key not in images:
            found.skipped.append(Skipped(key, f"listed in {where}, but no image {key}.jpg in JPEGImages"))
        elif key not in masks:
            found.skipped.append(Skipped(str(images[key]), f"no mask: looked for {key}.png in SegmentationClass"))
        else:
            pairs.append(Candidate(images[key], IndexMask(masks[key])))
    return pairs
