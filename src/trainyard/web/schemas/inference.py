"""Response models of the inference, network and solver routes (see web/schemas/jobs.py); the system
report's are built in jobs/views/system_documents.py.

As there, every field is named and no other is allowed (``Document``). The open-ended parts
(a layer table's rows, a summary an inference job writes, live readings of a process or a
cluster's nodes) are named fields typed ``dict[str, Any]``, described where they are built.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import Field

from trainyard.core.document import Document, Number, Point, where_given
from trainyard.jobs.kinds.documents import InferenceDetail, JobBrief
from trainyard.jobs.views.system_documents import Holder, JobHardware, Slot, SystemGPU, SystemReport

__all__ = ["Holder", "JobHardware", "Slot", "SystemGPU", "SystemReport"]  # built in jobs/views, named here too

# --- classify (one request) --------------------------------------------------------------


class ModelInput(Document):
    """What the answering model takes (its stored preprocessing): images are fitted to it."""

    width: int
    height: int
    channels: int
    resize: str
    crop: int | None = None  # a classifier's centre crop
    mean: str | None = None  # a classifier's mean subtraction: image, pixel or none


class Saliency(Document):
    image: str  # a PNG data URI: the Grad-CAM map over the input
    class_: str = Field(alias="class")  # the class it explains
    layer: str  # the layer it was taken at


class LayerViews(Document):
    layers: list[dict[str, Any]]  # one row per layer (inference/visualize.py describe_layer)


class LabelScore(Document):
    label: str
    score: Number  # the label's sigmoid score, 0..1


class ImageResult(Document):
    image: str
    predictions: list[tuple[str, Number]]  # [[label, confidence 0..1], ...], best first
    # a multi-label model's: every label at or over its threshold, best first (docs/multilabel.md)
    labels: list[LabelScore] | None = where_given()
    visualization: LayerViews | None = where_given()  # with ?visualize
    saliency: Saliency | None = where_given()  # with ?saliency or ?visualize, where the network has a spatial layer


class Classified(Document):
    """POST /api/models/{id}/classify: the model that answered and one result per image."""

    model: str
    epoch: Number | None
    network: str | None
    classes: list[str]
    input: ModelInput
    results: list[ImageResult]


class DetectedBox(Document):
    label: str
    score: Number  # 0..1
    box: tuple[Number, Number, Number, Number]  # x1, y1, x2, y2 in the original image's pixels


class DetectResult(Document):
    image: str
    boxes: list[DetectedBox]  # best first
    visualization: LayerViews | None = where_given()  # with ?visualize: the first image's backbone and neck


class Detected(Document):
    """POST /api/models/{id}/detect: the detector that answered and one result per image."""

    model: str
    epoch: Number | None
    network: str | None
    classes: list[str]
    input: ModelInput
    threshold: Number
    results: list[DetectResult]


class SegmentResult(Document):
    image: str
    areas: dict[str, Number]  # class -> share of the image's pixels, 0..1
    # A PNG data URI: the 8-bit index mask at the image's own size, each pixel its class's index,
    # the very bytes `trainyard segment` writes for the image.
    mask: str


class Segmented(Document):
    """POST /api/models/{id}/segment: the segmenter that answered and one result per image."""

    model: str
    epoch: Number | None
    network: str | None
    classes: list[str]
    input: ModelInput
    results: list[SegmentResult]


# --- classify-many and evaluate jobs -----------------------------------------------------


class ManyStatus(Document):
    job: InferenceDetail
    source: dict[str, Any] | None
    summary: dict[str, Any] | None  # accuracy, confusion, top-N, once done
    rows: int
    csv: str


class ResultRow(Document):
    """A classifier's row (label, predictions) or a detector's (boxes): inference/results.py."""

    row: int
    image: str
    label: str | None = None  # the image's own label, where the list gave one
    predictions: list[tuple[str, Number]] | None = where_given()  # [[label, confidence], ...], best first
    boxes: list[DetectedBox] | None = where_given()
    error: str | None  # why the image has no result


class ResultPage(Document):
    total: int
    offset: int
    rows: list[ResultRow]


class TopImage(Document):
    row: int
    image: str
    confidence: Number


class TopClass(Document):
    class_: str = Field(alias="class")
    images: list[TopImage]  # surest first


class TopN(Document):
    classes: list[TopClass]  # per class, the images surest of it (summary.json's top_n)


class Evaluation(Document):
    job: InferenceDetail
    split: str | None
    dataset: str | None
    epoch: Number | None
    evaluation: dict[str, Any] | None


class InferenceList(Document):
    jobs: list[JobBrief]


# --- networks -----------------------------------------------------------------------------


class Network(Document):
    name: str
    description: str
    image_size: int
    batch_size: int
    source_module: str
    min_image_size: int
    task: str  # "classification" or "detection"
    params: int | None
    # How it trains where the user sets nothing else (TrainSettings fields, its panels as
    # objects; {}: the defaults): the new-model form fills its fields with it.
    recipe: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, info: Any, params: int | None) -> Network:
        """The document of a NetworkInfo, its recipe as an object."""
        return cls(**{**asdict(info), "recipe": info.recipe_settings()}, params=params)


class NetworkList(Document):
    networks: list[Network]
    num_classes: int
    in_channels: int


class NetworkNames(Document):
    networks: list[str]
    image_sizes: dict[str, int] = {}  # name -> the input size timm's configuration intends


class Inspection(Document):
    """A network built for a check: ``ok`` with its layers, or ``ok: false`` with the error
    (networks/check.py, networks/layer_report.py)."""

    ok: bool
    layers: list[dict[str, Any]] | None = where_given()  # name, type, output_shape, params, ...
    params: int | None = where_given()
    trainable_params: int | None = where_given()
    input_shape: list[int] | None = where_given()
    output_shape: list[int] | None = None  # None for a detector (boxes per image)
    state: dict[str, list[int]] | None = where_given()  # the state dict's shapes, to match weights by
    task: str | None = where_given()  # "detection" for a detector
    error: str | None = where_given()
    line: int | None = where_given()  # the line of the network's file the error points at
    transient: bool | None = where_given()  # the check itself failed (timed out, crashed): worth a retry
    timed_out: bool | None = where_given()


# --- solvers ------------------------------------------------------------------------------


class Solver(Document):
    name: str
    description: str
    uses_momentum: bool


class LRPolicy(Document):
    name: str
    description: str
    uses: list[str]
    defaults: dict[str, Any]


class Solvers(Document):
    solvers: list[Solver]
    lr_policies: list[LRPolicy]


class LRCurve(Document):
    points: list[Point]  # [[percent of training, lr], ...]
