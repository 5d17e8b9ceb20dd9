"""What the JSON routes under /api answer, as pydantic models, so /openapi.json documents it.

Every answer is a ``Document`` (core/document.py): every field named and typed, no other allowed;
the schema says ``additionalProperties: false`` and means it. The job documents themselves live
with the jobs that build them (jobs/kinds/documents.py) and are named here for the routers; here
are the answers the web routes make of them. Models of the inference, network and system answers
are in web/schemas/inference.py, of compare, sweeps and the weights store in web/schemas/runs.py.
"""

from __future__ import annotations

from trainyard.core.document import Document, Number, Point, where_given
from trainyard.jobs.kinds.documents import (
    AnyJobDetail,
    Best,
    DatasetDetail,
    DatasetList,
    HistoryEntry,
    InferenceDetail,
    JobBrief,
    JobDetail,
    JobList,
    JobPage,
    ModelDetail,
    ModelList,
    SkippedImage,
    StoredModelSpec,
)

__all__ = ["AnyJobDetail", "Best", "DatasetDetail", "DatasetList", "Document", "HistoryEntry", "InferenceDetail",
           "JobBrief", "JobDetail", "JobList", "JobPage", "ModelDetail", "ModelList", "Number", "Point",
           "SkippedImage", "StoredModelSpec", "where_given"]


class InferenceJob(InferenceDetail):
    """A classify-many or evaluate job just queued, with the page that shows it."""

    page: str


class CreatedModels(Document):
    jobs: list[ModelDetail]


class Checked(Document):
    ok: bool


class Deleted(Document):
    deleted: str


class BoxRef(Document):
    label: int  # class index
    box: list[float]  # x1, y1, x2, y2 in the stored image's pixels


class ImageRef(Document):
    index: int
    label: int  # the class; for a detection split, the number of boxes; multi-label: the number of labels
    boxes: list[BoxRef] | None = None  # detection only
    labels: list[int] | None = where_given()  # multi-label only: the image's labels (indices into labels.txt)


class ImagePage(Document):
    split: str
    total: int
    offset: int
    images: list[ImageRef]
    width: int | None = None  # detection: the stored size the boxes are in
    height: int | None = None
