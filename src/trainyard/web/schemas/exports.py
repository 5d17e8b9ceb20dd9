"""POST /api/models/{id}/export: what it takes (one format of inference/exporters) and what it
answers, the export-time check's figures (the archive's manifest.json) and where to download it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainyard.core.document import Document, Number, where_given


class ExportRequest(BaseModel):
    """As ``trainyard export MODEL --format F --epoch E --calibration-images N --force``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    format: str = Field("onnx", max_length=40, description="onnx, onnx-int8, openvino, torchscript, ... "
                        "(GET /api/export-formats lists them)")
    epoch: float | None = Field(None, ge=0, description="the snapshot (default: the best, else the latest)")
    calibration_images: int = Field(200, ge=1, le=100_000, description="training images an int8 export "
                                    "calibrates on")
    force: bool = Field(False, description="ship a copy beyond tolerance, its measured difference in the manifest")


class ModelExport(Document):
    """One format's archive, written and checked against PyTorch; ``manifest`` holds every figure."""

    export_format: str
    epoch: Number
    snapshot: str  # why that snapshot ("the best by validation accuracy"); "" where it was asked for
    archive_bytes: int
    download: str  # GET it for the .tar.gz
    size_bytes: int | None = where_given()  # the copy of the network beside the fp32 graph's
    reference_size_bytes: int | None = where_given()
    precision: str | None = where_given()
    checked: bool | None = where_given()  # false: this machine cannot run the copy (Core ML off Apple machines)
    not_checked_because: str | None = where_given()
    top1_agreement: float | None = where_given()  # a classifier's, 0..1
    max_logit_diff: float | None = where_given()
    accuracy: float | None = where_given()
    accuracy_reference: float | None = where_given()
    latency_ms: float | None = where_given()  # per image at one thread
    reference_latency_ms: float | None = where_given()
    forced: bool | None = where_given()
    manifest: dict[str, Any] = Field(default_factory=dict)  # the archive's manifest.json ({}: a sandboxed export)


class ExportFormat(Document):
    name: str
    summary: str
    tasks: list[str]
    available: bool  # its runtime is installed here
    checked_here: bool  # this machine can run the copy, so an export is checked against PyTorch here
    install: str  # what brings it where it is not


class ExportFormats(Document):
    formats: list[ExportFormat]
    default: str
