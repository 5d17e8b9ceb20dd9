"""Turn a segmentation spec into a plan: each split's image and mask pairs, with a per-file report.

The spec's mask format (spec_rules.py's ``mask_format``) picks its reader (formats.py), which
finds the classes and the candidate pairs: index or colour PNGs matched by stem, a Pascal VOC
root, or a COCO file's polygons and RLE. Every pair is checked here whatever its format (the
image's size from its header, the mask decoded: its size and its indices), so a bad pair is left
out with its reason and the dataset builds from the good ones, as detection's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainyard.datasets.detection.sizes import image_size
from trainyard.datasets.images import ImageError
from trainyard.datasets.segmentation.formats import MASK_READERS
from trainyard.datasets.segmentation.masks import IGNORE, Candidate, MaskSource
from trainyard.datasets.segmentation.spec_rules import mask_format
from trainyard.datasets.sources import MAX_IGNORED_LISTED, Skipped, set_ignored_apart
from trainyard.datasets.splits import split_off

__all__ = ["IGNORE", "SegmentationPlan", "SegmentationSample", "collect_segmentation"]


@dataclass
class SegmentationSample:
    image: Path
    mask: MaskSource
    size: tuple[int, int]  # the image's (w, h), upright as the build decodes it


@dataclass
class SegmentationPlan:
    classes: list[str]
    splits: dict[str, list[SegmentationSample]]
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_images: int = 0
    ignored: list[str] = field(default_factory=list)
    labels_format: str = "index"


def check_pair(candidate: Candidate, classes: int) -> SegmentationSample:
    """The pair as a sample, or ImageError naming what is wrong with it."""
    size = image_size(candidate.image)
    values = candidate.mask.read()
    name = candidate.mask.name
    if (values.shape[1], values.shape[0]) != size:
        raise ImageError(f"mask {name} is {values.shape[1]}x{values.shape[0]}, its image {size[0]}x{size[1]}")
    unknown = np.unique(values[(values >= classes) & (values != IGNORE)])
    if len(unknown):
        listed = ", ".join(str(v) for v in unknown[:5].tolist())
        raise ImageError(f"mask {name} holds class index {listed}, but there are {classes} classes "
                         f"(0..{classes - 1}; {IGNORE} = ignore)")
    return SegmentationSample(candidate.image, candidate.mask, size)


def _checked(candidates: list[Candidate], classes: int, plan: SegmentationPlan) -> list[SegmentationSample]:
    samples = []
    for candidate in candidates:
        try:
            samples.append(check_pair(candidate, classes))
        except ImageError as e:
            plan.skipped.append(Skipped(str(candidate.image), str(e)))
    return samples


def collect_segmentation(spec: Any, job_dir: Path) -> SegmentationPlan:
    """The plan of the segmentation dataset ``spec`` describes (paths relative to ``job_dir``)."""
    fmt = mask_format(spec)
    found = MASK_READERS[fmt](spec, job_dir)
    plan = SegmentationPlan(found.classes, {}, skipped=list(found.skipped), labels_format=fmt)
    given = {split: _checked(candidates, len(found.classes), plan) for split, candidates in found.splits.items()}
    train, val, test = split_off(given.pop("train", []), 0 if "val" in given else spec.val_percent,
                                 0 if "test" in given else spec.test_percent, spec.seed, salt=43)
    plan.splits = {"train": train, "val": given.get("val", val), "test": given.get("test", test)}
    skipped, ignored = set_ignored_apart(found.walked)
    plan.not_images, plan.ignored = len(ignored), ignored[:MAX_IGNORED_LISTED]
    plan.skipped += skipped
    return plan
