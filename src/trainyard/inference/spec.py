"""The validated spec.json of an inference job (classify-many, evaluate). Imports no torch.

A classify-many job of a detection model (``task`` detection) detects instead: boxes per image.

The layer that creates the job resolves the model's checkpoint (so "latest" means the latest
when the job was asked for, even while training goes on) and checks every path against the
data roots; the job process reads this spec back and touches nothing else.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, model_validator

from trainyard.core.stored import SpecModel, is_stored, read_stored
from trainyard.core.vocabulary import DEFAULT_TASK, Task

SPEC_VERSION = 1
KINDS = ("classify-many", "evaluate")
SOURCES = ("list_file", "folder", "archive", "split")


class InferenceSpec(SpecModel):
    """What to run a model on, and how to report it."""

    model_config = ConfigDict(extra="forbid")

    version: int = SPEC_VERSION
    kind: Literal["classify-many", "evaluate"]
    id: str | None = None
    name: str = Field(min_length=1)
    model_id: str = Field(min_length=1)
    checkpoint: str = Field(min_length=1)  # the checkpoint file, resolved when the job was created
    epoch: int | float  # as the checkpoint names it: 3, or 2.5 for a fractional snapshot
    task: Task = DEFAULT_TASK  # the model's: classes or boxes

    # classify-many: exactly one source; evaluate: a dataset split.
    list_file: str | None = None  # lines of "path [label]", label a class index or name
    folder: str | None = None  # images anywhere below; first-level folders named like classes label them
    archive: str | None = None  # an uploaded .zip/.tar(.gz), unpacked into the job folder
    image_root: str | None = None  # base of relative paths in list_file (default: its folder)
    dataset_dir: str | None = None
    dataset_id: str | None = None
    split: Literal["train", "val", "test"] | None = None

    roots: list[str] = Field(default_factory=list)  # images must lie inside these (data roots)

    top: int = Field(5, ge=1, le=100)  # predictions kept per image
    top_n: int = Field(12, ge=0, le=100)  # images kept per class for the top-N view
    batch_size: int = Field(64, ge=1, le=4096)
    threshold: float = Field(0.5, ge=0, le=1)  # a detection model's smallest box score kept

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> InferenceSpec:
        if is_stored(info):  # it was valid when it was written
            return self
        if self.kind == "evaluate":
            if not (self.dataset_dir and self.split):
                raise ValueError("an evaluation needs a dataset and a split")
            return self
        given = [s for s in ("list_file", "folder", "archive") if getattr(self, s)]
        if self.split:
            given.append("split")
            if not self.dataset_dir:
                raise ValueError("classifying a dataset split needs its dataset")
        if len(given) != 1:
            raise ValueError("give exactly one source of images: a list file, a folder, an "
                             f"archive or a dataset split (got {', '.join(given) or 'none'})")
        return self

    @property
    def source(self) -> str:
        """Which of SOURCES this job reads."""
        if self.kind == "evaluate" or self.split:
            return "split"
        return next(s for s in ("list_file", "folder", "archive") if getattr(self, s))


def stored_spec(data: object) -> InferenceSpec:
    """A stored inference spec (a spec.json's content) read back, however old (core/stored.py)."""
    return read_stored(InferenceSpec, data, what="stored inference spec")
