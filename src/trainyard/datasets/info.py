"""`DatasetInfo`: a dataset's facts (geometry, classes, counts, task) as one typed object.

A build writes them to the dataset's ``info.json`` (datasets/build.py, datasets/detection/build.py)
and reports them as its job's summary (a ``result`` event, folded into the job row). Readers (the
job documents and pages, the checks before a model is queued, training) read them through here,
once, and then by attribute. Reading is tolerant: an older build's file lacks newer fields, and a
field of the wrong type reads as unknown (its default) rather than failing the page that shows it.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidatorFunctionWrapHandler, field_validator

from trainyard.core import jobfiles

INFO_FILE = "info.json"


class DatasetInfo(BaseModel):
    """What a built dataset is (or what its build reported so far). Unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int = 1
    task: str | None = None  # "classification" or "detection"; an older build's says none
    name: str | None = None
    classes: list[str] = []
    counts: dict[str, dict[str, int]] = {}  # split -> class -> images (detection: images with a box of it)
    images: dict[str, int] = {}  # split -> images
    skipped: list[dict[str, Any]] = []  # {"path", "reason"} of each file left out
    not_images: int = 0  # files in the folders that are not images
    ignored: list[str] = []  # their paths (sources.MAX_IGNORED_LISTED at most)
    warnings: list[str] = []
    width: int | None = None
    height: int | None = None
    channels: int | None = None
    resize: str | None = None
    encoding: str | None = None
    depth: int = 8  # bits per sample: 8, or 16 (an older build's says none: 8)
    # a 16-bit or N-channel dataset's per-channel mean and std over the train split, 0..1 units
    channel_mean: list[float] | None = None
    channel_std: list[float] | None = None
    parent: str | None = None  # the dataset this one appended to
    seed: int | None = None
    # detection's box statistics and notes (datasets/detection/stats.py), absent otherwise
    labels_format: str | None = None
    box_counts: dict[str, dict[str, int]] | None = None
    empty_images: dict[str, int] | None = None
    counts_meaning: dict[str, str] | None = None  # what "counts" and "box_counts" count
    box_sizes: dict[str, Any] | None = None
    label_notes: list[dict[str, Any]] | None = None
    # segmentation's (datasets/segmentation/): split -> class -> share of the labelled pixels
    pixel_shares: dict[str, dict[str, float]] | None = None
    # multi-label's (datasets/multilabel/build.py): train images with labels i and j, labels an image
    cooccurrence: list[list[int]] | None = None
    labels_per_image: dict[str, float] | None = None

    @field_validator("*", mode="wrap")
    @classmethod
    def _unknown_if_malformed(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)

    @classmethod
    def of(cls, data: object) -> DatasetInfo:
        """An info.json's content, or a dataset job's summary, as DatasetInfo (anything else: empty)."""
        return cls.model_validate(data) if isinstance(data, dict) else cls()

    @property
    def has_geometry(self) -> bool:
        return bool(self.width)


def read_dataset_info(dataset_dir: str | os.PathLike) -> DatasetInfo | None:
    """The info.json in a built dataset's folder (a dataset job's ``JobFolder.dataset``), read as the
    server reads every job file (core/jobfiles.py: no link, no FIFO, bounded); None while it is
    not built (or its file cannot be read as JSON)."""
    try:
        return DatasetInfo.of(jobfiles.read_json(dataset_dir, INFO_FILE))
    except (OSError, ValueError):
        return None
