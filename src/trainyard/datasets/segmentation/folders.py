"""The mask-folder formats: an image folder and a mask folder per split (``index`` PNGs, or
``colors`` RGB PNGs through a colour table).

Images are found in the image folders (the classification builder's walk: links out of the
folder skipped) and matched with the mask of the same key (the path below its folder without
the extension: ``a/b.jpg`` and ``a/b.png``). An image without a mask and a mask without an
image are report lines.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.labels import image_key
from trainyard.datasets.segmentation.colours import ColourMask, read_colour_table
from trainyard.datasets.segmentation.masks import Candidate, Found, IndexMask, MaskSource
from trainyard.datasets.sources import Skipped, iter_images

SPLITS = ("train", "val", "test")


def by_key(folder: Path, skipped: list[Skipped] | None, what: str) -> dict[str, Path]:
    """The images below ``folder`` by key; ``skipped`` gets what the walk left out."""
    if not folder.is_dir():
        raise DatasetError(f"{what} folder not found: {folder}")
    return {image_key(p, folder): p for p in iter_images(folder, folder.resolve(), skipped)}


def match(images: dict[str, Path], masks: dict[str, Path], mask_of: Callable[[Path], MaskSource],
          found: Found, where: str) -> list[Candidate]:
    """The candidates of the images with a mask of their key; the rest are report lines."""
    pairs = []
    for key, path in sorted(images.items()):
        if key in masks:
            pairs.append(Candidate(path, mask_of(masks[key])))
        else:
            found.skipped.append(Skipped(str(path), f"no mask: looked for {key}.png in {where}"))
    for key in sorted(set(masks) - set(images)):
        found.skipped.append(Skipped(str(masks[key]), "mask with no image: left out"))
    return pairs


def _folders(spec: Any, job_dir: Path, classes: list[str], mask_of: Callable[[Path], MaskSource]) -> Found:
    found = Found(classes, {})
    for split in SPLITS:
        images_dir, masks_dir = (getattr(spec, f"{split}_{part}") for part in ("folder", "labels"))
        if images_dir is None:
            continue
        images = by_key(job_dir / images_dir, found.walked, f"{split} image")
        masks = by_key(job_dir / masks_dir, None, f"{split} mask")
        found.splits[split] = match(images, masks, mask_of, found, str(job_dir / masks_dir))
    return found


def read_index_folders(spec: Any, job_dir: Path) -> Found:
    """Index PNGs: each value is the class's index in ``--classes`` (the spec requires them)."""
    return _folders(spec, job_dir, [c.strip() for c in spec.classes], IndexMask)


def read_colour_folders(spec: Any, job_dir: Path) -> Found:
    """RGB PNGs read through the colour table ``mask_colors`` names (colours.py)."""
    given = [c.strip() for c in spec.classes] if spec.classes else None
    table = read_colour_table(job_dir / spec.mask_colors, given)
    return _folders(spec, job_dir, table.classes, lambda path: ColourMask(path, table))
