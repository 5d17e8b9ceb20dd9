"""Response models of the inference, network, solver and system routes (see web/schemas/jobs.py).

These answers carry open-ended parts (layer views, per-class figures, live hardware readings),
so most models allow more fields and type only what scripts and the pages read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trainyard.core.status import Status
from trainyard.web.schemas.jobs import JobBrief, JobDetail, Number, Open, Point

# --- classify (one request) --------------------------------------------------------------


class ImageResult(Open):
    image: str
    predictions: list[tuple[str, Number]]  # [[label, confidence 0..1], ...], best first


class Classified(Open):
    """POST /api/models/{id}/classify: the model that answered and one result per image."""

    model: str
    epoch: Number | None
    network: str | None
    classes: list[str]
    results: list[ImageResult]


class DetectedBox(Open):
    label: str
    score: Number  # 0..1
    box: tuple[Number, Number, Number, Number]  # x1, y1, x2, y2 in the original image's pixels


class DetectResult(Open):
    image: str
    boxes: list[DetectedBox]  # best first


class Detected(Open):
    """POST /api/models/{id}/detect: the detector that answered and one result per image."""

    model: str
    epoch: Number | None
    network: str | None
    classes: list[str]
    threshold: Number
    results: list[DetectResult]


# --- classify-many and evaluate jobs -----------------------------------------------------


class ManyStatus(BaseModel):
    job: JobDetail
    source: dict[str, Any] | None
    summary: dict[str, Any] | None  # accuracy, confusion, top-N, once done
    rows: int
    csv: str


class ResultRow(Open):
    row: int
    image: str


class ResultPage(BaseModel):
    total: int
    offset: int
    rows: list[ResultRow]


class TopN(BaseModel):
    classes: Any  # per class, the images surest of it (summary.json's top_n)


class Evaluation(BaseModel):
    job: JobDetail
    split: str | None
    dataset: str | None
    epoch: Number | None
    evaluation: dict[str, Any] | None


class InferenceList(BaseModel):
    jobs: list[JobBrief]


# --- networks -----------------------------------------------------------------------------


class Network(Open):
    name: str
    description: str
    image_size: int
    batch_size: int
    source_module: str
    min_image_size: int
    params: int | None


class NetworkList(BaseModel):
    networks: list[Network]
    num_classes: int
    in_channels: int


class NetworkNames(BaseModel):
    networks: list[str]


class Inspection(Open):
    """A network built for a check: ``ok`` with its layers, or ``ok: false`` with the error."""

    ok: bool


# --- solvers ------------------------------------------------------------------------------


class Solver(Open):
    name: str
    description: str
    uses_momentum: bool


class LRPolicy(Open):
    name: str
    description: str
    uses: list[str]
    defaults: dict[str, Any]


class Solvers(BaseModel):
    solvers: list[Solver]
    lr_policies: list[LRPolicy]


class LRCurve(BaseModel):
    points: list[Point]  # [[percent of training, lr], ...]


# --- system and live figures ---------------------------------------------------------------


class SystemGPU(Open):
    index: int
    name: str
    memory_total: Number | None
    label: str | None
    job: str | None  # the job holding it


class SystemReport(Open):
    version: str
    backend: str
    gpus: list[SystemGPU]
    cpu: dict[str, Any]
    memory: dict[str, Any]
    leases: dict[str, str]


class JobHardware(Open):
    """GET /api/jobs/{id}/hardware: the job's status and its live figures."""

    id: str
    status: Status
    status_detail: str | None
    error: str | None
    progress: Number | None
    eta: Number | None
    resources: list[str]
    gpus: list[dict[str, Any]]
    cpu: dict[str, Any] | None
    system: dict[str, Any]
    workers: list[dict[str, Any]]
    time: Number
