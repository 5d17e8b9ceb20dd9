"""What every mask format's reader hands the segmentation build: candidate pairs whose masks read
as (h, w) uint8 class indices, and the report lines of what it left out.

A mask is read twice: once when the pairs are collected (so a bad one is reported and left out
before anything is written) and once when the pair is stored. Nothing is kept decoded between
the two, so a plan of many large masks costs the paths (or a COCO file's polygons), not pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from PIL import Image, UnidentifiedImageError

from trainyard.datasets.images import SAFE_FORMATS, ImageError, check_pixel_count
from trainyard.datasets.sources import Skipped

IGNORE = 255  # a mask pixel of no class: left out of the loss and the metrics
INDEX_MODES = ("L", "P")  # an 8-bit grey or palette PNG: its values are the class indices


class MaskSource(Protocol):
    """One image's mask, read on demand."""

    @property
    def name(self) -> str: ...  # how a report line names it: a file name, or a COCO file's entry

    def read(self) -> np.ndarray: ...  # (h, w) uint8 class indices; ImageError saying why not


@dataclass(frozen=True)
class Candidate:
    """An image and its mask, before the pair is checked."""

    image: Path
    mask: MaskSource


@dataclass
class Found:
    """What a format's reader found: the classes in index order, each split's candidates (val and
    test only where the input gives them; else they are drawn from train), the pairs and labels it
    left out, and what the image walk skipped (files that are not images are set apart later)."""

    classes: list[str]
    splits: dict[str, list[Candidate]]
    skipped: list[Skipped] = field(default_factory=list)
    walked: list[Skipped] = field(default_factory=list)


def open_png(path: Path, what: str = "mask") -> Image.Image:
    """The opened image (caller closes it), or ImageError saying why it is not one."""
    try:
        img = Image.open(path, formats=SAFE_FORMATS)
        check_pixel_count(img)
        return img
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(f"{what} is not an image, or an unsupported or damaged format") from None
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        raise ImageError(f"cannot read {what}: {e}") from None


def read_index_png(path: Path) -> np.ndarray:
    """The (h, w) uint8 class indices of an index PNG; ImageError saying why it is not one."""
    with open_png(path) as img:
        if img.mode not in INDEX_MODES:
            raise ImageError(f"mask is a {img.mode} image, not an 8-bit index or palette PNG "
                             "(each pixel's value its class index)")
        try:
            return np.array(img, dtype=np.uint8)
        except (OSError, SyntaxError, ValueError, EOFError) as e:  # a truncated file fails on decode
            raise ImageError(f"cannot read mask: {e}") from None


@dataclass(frozen=True)
class IndexMask:
    """An 8-bit index or palette PNG: each pixel's value is its class index (a palette PNG's
    indices, not its colours: VOC's SegmentationClass masks read so)."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def read(self) -> np.ndarray:
        return read_index_png(self.path)
