"""What the JSON routes under /api answer, as pydantic models, so /openapi.json documents it.

The documents are built as dicts elsewhere (jobs/views/documents.py, kinds, results); these models
describe them and FastAPI checks each answer against its model. The fields scripts rely on
(docs/interface.md) are typed; documents with open-ended parts allow more fields ("more fields
are welcome"), so a new field never breaks an answer. Numbers that may be either an int or a
float (epochs, figures) are ``Number``: a plain ``float`` would turn an epoch 3 into 3.0.
Models of the inference, network and system answers are in web/schemas/inference.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from trainyard.core.status import Status

Number = int | float
Point = list[Number]  # [x, y], e.g. [epoch, value]


class Open(BaseModel):
    """A document that may carry more fields than the ones named here."""

    model_config = ConfigDict(extra="allow")


class HistoryEntry(Open):
    status: Status
    detail: str | None
    time: Number


class JobBrief(Open):
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


class JobDetail(JobBrief):
    """A job with what its kind adds (``job_detail``): any kind, so its extra fields are open."""

    history: list[HistoryEntry]


class SkippedImage(Open):
    path: str
    reason: str


class DatasetDetail(JobDetail):
    classes: list[str]
    counts: dict[str, dict[str, int]]  # split -> class name -> images
    skipped: list[SkippedImage]
    image_size: list[int | None] | None
    channels: int | None
    resize: str | None
    encoding: str | None


class Best(Open):
    epoch: Number
    val_accuracy: Number


class ModelDetail(JobDetail):
    dataset: str | None
    network: str | None
    epoch: Number
    epochs: int | None
    snapshots: list[Number]  # epochs with a checkpoint
    metrics: dict[str, list[Point]]  # val_accuracy, val_loss, train_loss, ...: [[epoch, value], ...]
    best: Best | None
    workers: list[dict[str, Any]]
    spec: dict[str, Any]


class InferenceJob(JobDetail):
    """A classify-many or evaluate job, with the page that shows it."""

    page: str


class DatasetList(BaseModel):
    datasets: list[JobBrief]


class ModelList(BaseModel):
    models: list[JobBrief]


class JobList(BaseModel):
    jobs: list[JobBrief]


class JobPage(JobList):
    """A page of GET /api/jobs (jobs/views/feed.py)."""

    next_cursor: str | None
    as_of: Number
    total: int


class CreatedModels(BaseModel):
    jobs: list[ModelDetail]


class Checked(BaseModel):
    ok: bool


class Deleted(BaseModel):
    deleted: str


class ImageRef(BaseModel):
    index: int
    label: int


class ImagePage(BaseModel):
    split: str
    total: int
    offset: int
    images: list[ImageRef]
