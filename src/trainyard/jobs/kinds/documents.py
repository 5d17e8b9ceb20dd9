"""The job documents: what the API answers about a job, what `--json` prints and the pages show.

Built as these models where they are made (jobs/views/documents.py ``job_brief`` and
``job_detail``, each kind's ``describe`` in jobs/kinds/registry.py), and served as they are:
every field named and typed, no other allowed (core/document.py). Parts that are open by nature (a
summary a job writes, a dataset's box statistics) are typed ``dict[str, Any]`` fields, named
and described.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_serializer,
    model_validator,
)

from trainyard.core.document import Document, Number, Point, where_given
from trainyard.core.errors import InvalidInput
from trainyard.core.status import Status
from trainyard.core.stored import STORED, is_stored, read_stored
from trainyard.training.spec import ModelSpec


class HistoryEntry(Document):
    status: Status
    detail: str | None
    time: Number


class JobBrief(Document):
    """The fields every job has (jobs/views/documents.py ``job_brief``)."""

    id: str
    kind: str
    name: str
    status: Status
    status_detail: str | None
    error: str | None
    progress: Number
    eta: Number | None
    elapsed: Number | None
    created_at: Number
    started_at: Number | None
    finished_at: Number | None
    updated_at: Number | None
    parent: str | None
    group: str | None
    needs: dict[str, Any] | None
    summary: dict[str, Any] | None
    resources: list[str]
    owner: str | None = None  # the user who made it (jobs/store/actor.py)
    visibility: str = "private"  # private | team


class TaggedBrief(JobBrief):
    """A job as `trainyard jobs list --json` prints it: its brief with its tags and notes."""

    tags: list[str] = []
    notes: str = ""


class JobDetail(JobBrief):
    """A job with its history, tags and notes (``job_detail``); each kind's adds its own fields."""

    history: list[HistoryEntry]
    tags: list[str] = []
    notes: str = ""


class SkippedImage(Document):
    path: str
    reason: str


class DatasetDetail(JobDetail):
    """A dataset (jobs/kinds/registry.py ``describe_dataset``, from its info.json)."""

    kind: Literal["dataset"]
    task: str | None = None  # "classification" or "detection"
    classes: list[str]
    counts: dict[str, dict[str, int]]  # split -> class name -> images
    images: dict[str, int] | None = where_given()  # split -> images
    skipped: list[SkippedImage]
    not_images: int = 0  # files in the folders that are not images
    ignored: list[str] = []  # their paths (the first 1,000)
    warnings: list[str] | None = where_given()
    image_size: list[int | None] | None
    channels: int | None
    depth: int | None = where_given()  # bits per sample, given when not 8 (a 16-bit dataset's 16)
    resize: str | None
    encoding: str | None
    # detection only (datasets/detection/stats.py): boxes per class, images with none, what each
    # count counts, the box-size histogram, and notes on labels left out or clipped
    labels_format: str | None = where_given()
    box_counts: dict[str, dict[str, int]] | None = where_given()
    empty_images: dict[str, int] | None = where_given()
    counts_meaning: dict[str, str] | None = where_given()
    box_sizes: dict[str, Any] | None = where_given()
    label_notes: list[dict[str, Any]] | None = where_given()
    # segmentation only (datasets/segmentation/store.py): split -> class -> share of labelled pixels
    pixel_shares: dict[str, dict[str, float]] | None = where_given()
    # multi-label only (datasets/multilabel/build.py): train images with labels i and j, labels an image
    cooccurrence: list[list[int]] | None = where_given()
    labels_per_image: dict[str, float] | None = where_given()


class Best(Document):
    epoch: Number
    val_accuracy: Number | None = None  # a classifier's (percent)
    val_map50: Number | None = None  # a detector's (0..1)
    val_miou: Number | None = None  # a segmenter's mean IoU (0..1)
    val_micro_f1: Number | None = None  # a multi-label classifier's (0..1)


class StoredModelSpec(ModelSpec):
    """A model job's spec.json as the API serves it: typed, and read back as every stored spec is
    (core/stored.py: an older spec's removed fields dropped, no rule added since applied to it)."""

    @model_validator(mode="wrap")
    @classmethod
    def _read_back(cls, data: Any, handler: ModelWrapValidatorHandler[StoredModelSpec],
                   info: ValidationInfo) -> StoredModelSpec:
        if is_stored(info):
            return handler(data)
        return cls.model_validate(data, context={STORED: True})  # an answer, not a new spec


def _model_spec_or_none(stored: object) -> object:
    """The stored spec where it reads as a model's, else None (none yet, a broken one): the job is
    still described (its document keeps the spec as written, for its page and `jobs show`)."""
    try:
        return stored if stored and read_stored(ModelSpec, stored) else None
    except InvalidInput:
        return None


class ModelDetail(JobDetail):
    """A model (jobs/kinds/registry.py ``describe_model``)."""

    kind: Literal["model"]
    dataset: str | None
    task: str | None = None  # "classification" or "detection" (boxes; best by val_map50)
    network: str | None
    epoch: Number
    epochs: Number | None  # fractions allowed (--epochs 1.5)
    # images per batch (per process) it trains with: the chosen one with batch_size auto (None
    # until chosen), the halved one after running out of memory (training/oom_retry.py)
    batch_size: int | None = None
    snapshots: list[Number]  # epochs with a checkpoint
    metrics: dict[str, list[Point]]  # val_accuracy, val_loss, train_loss, ...: [[epoch, value], ...]
    best: Best | None
    workers: list[dict[str, Any]]  # cluster mode: where each rank runs
    # what the training cannot do (training/diagnosis.py), each finding with what to try; [] when fine
    diagnosis: list[str] = []
    spec: Annotated[StoredModelSpec | None, BeforeValidator(_model_spec_or_none)]  # spec.json, typed

    @field_serializer("spec")
    def _as_written(self, spec: StoredModelSpec | None):  # no return type: the schema stays ModelSpec's
        # The fields the spec.json has (exclude_unset), as compare does: a setting an older job
        # never had is not made up at today's default.
        return spec.model_dump(mode="json", exclude_unset=True) if spec is not None else None


class InferenceDetail(JobDetail):
    """A classify-many or evaluate job (jobs/kinds/registry.py ``describe_inference``)."""

    kind: Literal["classify-many", "evaluate"]
    model: str | None
    epoch: Number | None
    task: str | None  # "classify-many" or "evaluate" (the spec's kind)
    split: str | None
    rows: int  # result rows written so far
    # once done (its summary or evaluation)
    accuracy: Number | None = None
    top5_accuracy: Number | None = None
    images: int | None = None
    boxes: int | None = where_given()  # a detection model's classify-many: boxes found


# GET /api/jobs/{id}: any job, its kind says which document
AnyJobDetail = Annotated[DatasetDetail | ModelDetail | InferenceDetail, Field(discriminator="kind")]


class DatasetList(Document):
    datasets: list[JobBrief]


class ModelList(Document):
    models: list[JobBrief]


class JobList(Document):
    jobs: list[JobBrief]


class JobPage(JobList):
    """A page of GET /api/jobs (jobs/views/feed.py)."""

    next_cursor: str | None
    as_of: Number
    total: int


