"""Build a segmentation dataset: each checked image and mask pair, resized alike, into splits.

Called by datasets/build.py's ``build_dataset`` for a spec whose task is segmentation, inside
its ``dataset.tmp`` -> ``dataset`` rename, so a failed or aborted build leaves nothing behind.
The pairs come from any mask format (collect.py). The image is fitted to the dataset's size by
squashing (bilinear), its mask by the same squash with nearest neighbour, so every stored mask
pixel is a class index of the original mask and the two stay aligned. Pairs are decoded in this
process: masks are read whole anyway (their values were checked when collected), and a build
that is killed starts again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from trainyard.core.events import EventWriter
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.images import ImageError, load_image
from trainyard.datasets.segmentation.collect import (
    IGNORE,
    SegmentationPlan,
    SegmentationSample,
    collect_segmentation,
)
from trainyard.datasets.segmentation.store import TASK, SegmentationSplitWriter, pixel_shares
from trainyard.datasets.sources import Skipped
from trainyard.datasets.storage import SPLITS, finish_dataset

LISTED_IN_LOG = 20


def fit_pair(sample: SegmentationSample, width: int, height: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """The stored image (H, W, C) uint8 and its mask (H, W) uint8 of one pair."""
    with load_image(sample.image, channels) as img:
        pixels = np.asarray(img.resize((width, height), Image.Resampling.BILINEAR), np.uint8)
    mask = Image.fromarray(sample.mask.read()).resize((width, height), Image.Resampling.NEAREST)
    return pixels.reshape(height, width, channels), np.asarray(mask, np.uint8)


def build_segmentation_into(tmp: Path, spec, job_dir: Path, events: EventWriter, workers: int,
                            progress_class) -> dict:
    """Build into ``tmp`` (afresh); return the info dict (also written as tmp/info.json)."""
    plan = collect_segmentation(spec, job_dir)
    total = sum(len(v) for v in plan.splits.values())
    events.emit("summary", task=TASK)
    events.log(f"{len(plan.classes)} classes, {total} image and mask pairs to process "
               f"({', '.join(f'{k} {len(v)}' for k, v in plan.splits.items() if v)})")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    writers = {split: SegmentationSplitWriter(tmp / split, spec.height, spec.width, spec.image_channels, spec.encoding,
                                              mean=split == "train")
               for split in SPLITS if plan.splits.get(split)}
    progress = progress_class(events, total)
    for split, writer in writers.items():
        for done, sample in enumerate(plan.splits[split], 1):
            try:
                writer.append(*fit_pair(sample, spec.width, spec.height, spec.image_channels))
            except ImageError as e:
                plan.skipped.append(Skipped(str(sample.image), str(e)))
            progress.update(split, done, len(plan.splits[split]))
        progress.finished += len(plan.splits[split])
    for writer in writers.values():
        writer.close()
    _report(events, plan)
    built = _info(spec, plan, writers)
    if not built["images"].get("train"):
        raise DatasetError("no usable training image: every pair was left out (see the skipped list)")
    finish_dataset(tmp, plan.classes, writers["train"].mean(), built)
    return built


def _info(spec, plan: SegmentationPlan, writers: dict[str, SegmentationSplitWriter]) -> dict:
    shares, counts = {}, {}
    for split, writer in writers.items():
        shares[split], counts[split] = pixel_shares(plan.classes, writer.masks())
    return {
        "version": 1, "task": TASK, "name": spec.name, "classes": plan.classes, "counts": counts,
        "pixel_shares": shares, "ignore_index": IGNORE, "labels_format": plan.labels_format,
        "counts_meaning": {"counts": "images holding at least one pixel of the class",
                           "pixel_shares": "the class's share of the split's labelled pixels"},
        "images": {split: len(w) for split, w in writers.items()},
        "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
        "not_images": plan.not_images, "ignored": plan.ignored, "warnings": plan.warnings,
        "width": spec.width, "height": spec.height, "channels": spec.image_channels, "resize": spec.resize,
        "encoding": spec.encoding, "parent": None, "seed": spec.seed,
    }


def _report(events: EventWriter, plan: SegmentationPlan) -> None:
    for s in plan.skipped[:LISTED_IN_LOG]:
        events.log(f"skipped {s.path}: {s.reason}", "warning")
    if len(plan.skipped) > LISTED_IN_LOG:
        events.log(f"... and {len(plan.skipped) - LISTED_IN_LOG} more skipped (listed in info.json)", "warning")
