"""The validated, versioned input of a dataset job (its spec.json).

Paths are strings as the user gave them; relative ones are taken relative to the job folder
(the web and CLI layers resolve and check user paths against the data roots before they get
here). Unknown fields are refused, so a typo does not silently fall back to a default.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from trainyard.core.errors import InvalidInput
from trainyard.core.stored import SpecModel, is_stored, read_stored
from trainyard.core.vocabulary import DEFAULT_TASK, MAX_CHANNELS, Task
from trainyard.datasets.detection.spec_rules import DETECTION_FIELDS, check_detection, default_resize
from trainyard.datasets.multilabel.spec_rules import check_multilabel
from trainyard.datasets.resize_plans import RESIZE
from trainyard.datasets.segmentation.spec_rules import SEGMENTATION_FIELDS, check_segmentation

MAX_SIZE = 4096
MAX_SEED = 2**32 - 1  # what numpy's generators take without surprise


def parse_size(text: str) -> tuple[int, int]:
    """Parse "WIDTHxHEIGHT" (e.g. "256x256") into (width, height)."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not match:
        raise InvalidInput(f"size {text!r} should look like WIDTHxHEIGHT, e.g. 256x256")
    width, height = int(match.group(1)), int(match.group(2))
    for name, value in (("width", width), ("height", height)):
        if not 1 <= value <= MAX_SIZE:
            raise InvalidInput(f"{name} {value} is outside 1..{MAX_SIZE}")
    return width, height


class DatasetSpec(SpecModel):
    """What to build: image sources, target geometry, split percents and storage encoding."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    version: int = 1
    kind: Literal["dataset"] = "dataset"
    id: str | None = None  # the job id, filled in when the job is created
    name: str = Field(min_length=1, max_length=200)  # the database's name column

    # Train source: exactly one of a class folder, a list + labels file, or an archive.
    train_folder: str | None = None
    val_folder: str | None = None
    test_folder: str | None = None
    train_list: str | None = None
    val_list: str | None = None
    test_list: str | None = None
    labels_file: str | None = None
    image_root: str | None = None
    train_archive: str | None = None
    val_archive: str | None = None

    width: int = Field(256, ge=1, le=MAX_SIZE)
    height: int = Field(256, ge=1, le=MAX_SIZE)
    # 1, 3, or any count up to MAX_CHANNELS (TIFF). None (not given): 3, or what the files say
    # when they are 16-bit or N-channel (datasets/told.py); `image_channels` is the former.
    channels: int | None = Field(None, ge=1, le=MAX_CHANNELS)
    depth: Literal[8, 16] | None = None  # bits per sample; None: told by the files
    resize: str = "squash"
    val_percent: float = Field(25, ge=0, le=100)
    test_percent: float = Field(0, ge=0, le=100)
    min_per_class: int = Field(2, ge=1)
    max_per_class: int | None = Field(None, ge=1)
    encoding: Literal["none", "png", "jpeg"] = "none"
    seed: int = Field(0, ge=0, le=MAX_SEED)
    # Detection (datasets/detection/): box labels for the train (and val, test) images.
    task: Task = DEFAULT_TASK
    train_labels: str | None = None  # a folder of label files, or one COCO .json
    val_labels: str | None = None
    test_labels: str | None = None
    labels_format: Literal["kitti", "yolo", "coco", "voc"] | None = None  # None: told by the files
    classes: list[str] | None = None  # NAME or NAME=NEW entries (datasets/detection/labels.py)
    # Segmentation's colour masks: a file of "R,G,B name" lines or a JSON {name: [r, g, b]}
    # (datasets/segmentation/colours.py); masks are then RGB PNGs.
    mask_colors: str | None = None
    # Append: the parent version's dataset folder, copied first.
    parent_dir: str | None = None
    dataset_version: int = Field(1, ge=1)  # 1, then +1 with each append
    # Folders that images named in list files must lie in; set by the job creator from the
    # settings' data roots (never taken from a user). None: not checked.
    data_roots: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _task_defaults(cls, data: object) -> object:
        return default_resize(data)

    @field_validator("classes", mode="before")
    @classmethod
    def _class_list(cls, value: object) -> object:
        return value.split(",") if isinstance(value, str) else value  # "a,b=c" as the CLI gives it

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> DatasetSpec:
        if is_stored(info):  # it was valid when it was written
            return self
        if self.val_percent + self.test_percent >= 100:  # every task draws val and test so
            raise ValueError(f"val_percent + test_percent must be under 100, "
                             f"got {self.val_percent:g} + {self.test_percent:g}")
        TASK_RULES[self.task](self)
        return self

    @property
    def image_channels(self) -> int:
        """The channels asked for, or 3 when not given (before the files have their say)."""
        return self.channels if self.channels is not None else 3

    @property
    def has_val_source(self) -> bool:
        return any(s is not None for s in (self.val_folder, self.val_list, self.val_archive))

    @property
    def has_test_source(self) -> bool:
        return self.test_folder is not None or self.test_list is not None


def _check_classification(spec: DatasetSpec) -> None:
    """Raise ValueError for a classification spec that cannot be built (class folders or lists)."""
    given = [name for name in DETECTION_FIELDS if getattr(spec, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} need task 'detection' or 'segmentation'")
    given = [name for name in SEGMENTATION_FIELDS if getattr(spec, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} need task 'segmentation'")
    train_sources = [spec.train_folder, spec.train_list, spec.train_archive]
    if sum(s is not None for s in train_sources) != 1:
        raise ValueError("give exactly one training source: train_folder, train_list "
                         "(with labels_file) or train_archive")
    if sum(s is not None for s in (spec.val_folder, spec.val_list, spec.val_archive)) > 1:
        raise ValueError("give at most one validation source: val_folder, val_list or val_archive")
    if spec.test_folder is not None and spec.test_list is not None:
        raise ValueError("give at most one test source: test_folder or test_list")
    lists = (spec.train_list, spec.val_list, spec.test_list)
    if any(s is not None for s in lists) and spec.labels_file is None:
        raise ValueError("image lists need a labels_file naming the classes")
    RESIZE.get(spec.resize)  # an unknown mode: "did you mean ...", listing the valid ones


def _eight_bit(rules: Callable[[DatasetSpec], None]) -> Callable[[DatasetSpec], None]:
    """A task's rules behind the 8-bit, 1- or 3-channel images its readers take (16-bit and
    N-channel images are read for single-label classification only, datasets/deep.py)."""

    def check(spec: DatasetSpec) -> None:
        if spec.image_channels not in (1, 3) or spec.depth == 16:
            raise ValueError(f"{spec.task} datasets are 8-bit with 1 or 3 channels")
        rules(spec)

    return check


# What a spec of each task must hold (core/tasks.py names the tasks): a new task registers its rules.
TASK_RULES: dict[str, Callable[[DatasetSpec], None]] = {
    "classification": _check_classification, "detection": _eight_bit(check_detection),
    "multilabel": _eight_bit(check_multilabel), "segmentation": _eight_bit(check_segmentation)}


def stored_spec(data: object) -> DatasetSpec:
    """A stored dataset spec (a spec.json's content) read back, however old (core/stored.py)."""
    return read_stored(DatasetSpec, data, what="stored dataset spec")
