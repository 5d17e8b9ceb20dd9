"""Turn a segmentation spec into a plan: each split's image and mask pairs, with a per-file report.

Images are found in the image folders (the classification builder's walk: links out of the
folder skipped) and matched with the mask of the same key (the path below its folder without
the extension: ``a/b.jpg`` and ``a/b.png``). A mask is an 8-bit index PNG (a palette PNG reads as
its indices): each pixel's value is its class's index in ``--classes``, 255 means "ignore".
Every pair is checked here (sizes from the headers, the mask's values decoded), so a bad pair is
left out with its reason and the dataset builds from the good ones, as detection's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.labels import image_key
from trainyard.datasets.detection.sizes import image_size
from trainyard.datasets.images import SAFE_FORMATS, ImageError, check_pixel_count
from trainyard.datasets.sources import MAX_IGNORED_LISTED, Skipped, iter_images, set_ignored_apart

IGNORE = 255  # a mask pixel of no class: left out of the loss and the metrics
INDEX_MODES = ("L", "P")  # an 8-bit grey or palette PNG: its values are the class indices


@dataclass
class SegmentationSample:
    image: Path
    mask: Path
    size: tuple[int, int]  # the image's (w, h), upright as the build decodes it


@dataclass
class SegmentationPlan:
    classes: list[str]
    splits: dict[str, list[SegmentationSample]]
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_images: int = 0
    ignored: list[str] = field(default_factory=list)


def read_mask(path: Path) -> np.ndarray:
    """The (h, w) uint8 class indices of an index PNG; ImageError saying why it is not one."""
    try:
        with Image.open(path, formats=SAFE_FORMATS) as img:
            check_pixel_count(img)
            if img.mode not in INDEX_MODES:
                raise ImageError(f"mask is a {img.mode} image, not an 8-bit index or palette PNG "
                                 "(each pixel's value its class index)")
            return np.array(img, dtype=np.uint8)
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError("mask is not an image, or an unsupported or damaged format") from None
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        raise ImageError(f"cannot read mask: {e}") from None


def check_pair(image: Path, mask: Path, classes: int) -> SegmentationSample:
    """The pair as a sample, or ImageError naming what is wrong with it."""
    size = image_size(image)
    values = read_mask(mask)
    if (values.shape[1], values.shape[0]) != size:
        raise ImageError(f"mask {mask.name} is {values.shape[1]}x{values.shape[0]}, its image {size[0]}x{size[1]}")
    unknown = np.unique(values[(values >= classes) & (values != IGNORE)])
    if len(unknown):
        listed = ", ".join(str(v) for v in unknown[:5].tolist())
        raise ImageError(f"mask {mask.name} holds class index {listed}, but there are {classes} classes "
                         f"(0..{classes - 1}; {IGNORE} = ignore)")
    return SegmentationSample(image, mask, size)


def _by_key(folder: Path, skipped: list[Skipped] | None, what: str) -> dict[str, Path]:
    if not folder.is_dir():
        raise DatasetError(f"{what} folder not found: {folder}")
    return {image_key(p, folder): p for p in iter_images(folder, folder.resolve(), skipped)}


def _pairs(images_dir: Path, masks_dir: Path, classes: int, plan: SegmentationPlan,
           skipped: list[Skipped], split: str) -> list[SegmentationSample]:
    images = _by_key(images_dir, skipped, f"{split} image")
    masks = _by_key(masks_dir, None, f"{split} mask")
    samples = []
    for key, path in sorted(images.items()):
        if key not in masks:
            plan.skipped.append(Skipped(str(path), f"no mask: looked for {key}.png in {masks_dir}"))
            continue
        try:
            samples.append(check_pair(path, masks[key], classes))
        except ImageError as e:
            plan.skipped.append(Skipped(str(path), str(e)))
    for key in sorted(set(masks) - set(images)):
        plan.skipped.append(Skipped(str(masks[key]), "mask with no image: left out"))
    return samples


def _split_off(samples: list, val_percent: float, test_percent: float, seed: int):
    """(train, val, test): ``floor(n * percent / 100)`` drawn with the seed for val, then test."""
    order = np.random.default_rng([seed, 43]).permutation(len(samples))
    n_val = int(len(samples) * val_percent / 100 + 1e-9)
    n_test = int(len(samples) * test_percent / 100 + 1e-9)
    pick = lambda part: [samples[i] for i in sorted(part)]  # noqa: E731
    return pick(order[n_val + n_test:]), pick(order[:n_val]), pick(order[n_val:n_val + n_test])


def collect_segmentation(spec, job_dir: Path) -> SegmentationPlan:
    """The plan of the segmentation dataset ``spec`` describes (paths relative to ``job_dir``)."""
    classes = [c.strip() for c in spec.classes]
    plan = SegmentationPlan(classes, {})
    skipped: list[Skipped] = []
    train = _pairs(job_dir / spec.train_folder, job_dir / spec.train_labels, len(classes), plan, skipped, "train")
    given = {}
    for split in ("val", "test"):
        if getattr(spec, f"{split}_folder") is not None:
            given[split] = _pairs(job_dir / getattr(spec, f"{split}_folder"),
                                  job_dir / getattr(spec, f"{split}_labels"), len(classes), plan, skipped, split)
    train, val, test = _split_off(train, 0 if "val" in given else spec.val_percent,
                                  0 if "test" in given else spec.test_percent, spec.seed)
    plan.splits = {"train": train, "val": given.get("val", val), "test": given.get("test", test)}
    skipped, ignored = set_ignored_apart(skipped)
    plan.not_images, plan.ignored = len(ignored), ignored[:MAX_IGNORED_LISTED]
    plan.skipped += skipped
    return plan
