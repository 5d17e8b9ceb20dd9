"""A segment answer for named images (``POST /api/models/{id}/segment``): each image's mask, as
the same index-PNG bytes ``trainyard segment`` writes, and each class's share of its pixels.

Images are segmented one at a time, so a request holds one full-size image (and its mask) at a
time beside the PNGs already made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainyard.datasets.images import ImageError
from trainyard.inference.segmentation.segmenter import LoadedSegmenter, areas, mask_png
from trainyard.inference.snapshots import InferenceError


@dataclass(frozen=True)
class SegmentedImage:
    image: str  # the name it was given by
    areas: dict[str, float]  # class -> share of the image's pixels (0..1)
    png: bytes  # the 8-bit index PNG at the image's own size, each pixel its class's index


def segment_images(loaded: LoadedSegmenter, sources: Sequence[tuple[str, bytes | Path]]) -> list[SegmentedImage]:
    """Each source's mask; InferenceError naming the first image that cannot be read (the
    request is refused whole, as detect's is)."""
    found = []
    for name, source in sources:
        try:
            mask = loaded.mask(source)
        except ImageError as exc:
            raise InferenceError(f"{name} is not a usable image: {exc}") from None
        found.append(SegmentedImage(name, areas(mask, loaded.classes), mask_png(mask)))
    return found
