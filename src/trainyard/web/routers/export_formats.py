"""Export one format from the server, as ``trainyard export MODEL --format F`` does (issue 44).

POST /api/models/{id}/export converts a snapshot to one format (inference/exporters), checks
the copy against PyTorch, keeps the archive in the server's part of the job folder and answers
the check's figures with the address to download it from: GET /api/models/{id}/export/{format}
(?epoch=). GET /api/export-formats lists the formats and whether each runs here.

A custom network is user code, which never runs in the server: its model exports to onnx only,
in a sandboxed child (inference/export_isolated.py), as the plain download does.
"""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from trainyard.core.errors import NotFound
from trainyard.core.paths import JobFolder
from trainyard.jobs.store.confinement import recorded_user_code
from trainyard.web.bounded_pool import BoundedPool
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.web.schemas.exports import ExportFormat, ExportFormats, ExportRequest, ModelExport

router = APIRouter(prefix="/api", tags=["models"])
# An export converts and measures a network (seconds; an int8 calibration longer): two at a time,
# a few waiting, the rest told to come back (429) rather than holding the server's threads.
exports = BoundedPool("trainyard-export", workers=2, queue=4)
FormatName = Annotated[str, PathParam(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")]


@router.get("/export-formats", response_model=ExportFormats)
async def export_formats() -> ExportFormats:
    """Every format, with whether its runtime is installed here and what installs it otherwise."""
    return await run_in_threadpool(_formats)  # the registry imports torch: off the event loop


def _formats() -> ExportFormats:
    from trainyard.inference.exporters import DEFAULT_FORMAT, FORMATS

    return ExportFormats(default=DEFAULT_FORMAT, formats=[
        ExportFormat(name=e.name, summary=e.summary, tasks=list(e.tasks), install=e.install, checked_here=e.runs_here(),
                     available=bool(e.runtime) and all(importlib.util.find_spec(m) for m in e.runtime))
        for e in FORMATS.values()])


@router.post("/models/{model_id}/export", response_model=ModelExport)
async def export_model(ctx: Ctx, model_id: str, body: ExportRequest) -> ModelExport:
    """Write ``format``'s archive of a snapshot, checked against PyTorch; answer its figures.

    An unknown format, a missing runtime, a custom network in a format other than onnx and an
    int8 copy beyond tolerance (without ``force``) are 422s that say why; nothing is written."""
    get_job_of_kind(ctx, model_id, "model")  # another user's private model: 404
    confined = recorded_user_code(ctx, model_id)
    job_dir = ctx.manager.folder(model_id).path
    return await exports.run(_export, model_id, job_dir, body, confined)


def _export(model_id: str, job_dir: Path, body: ExportRequest, confined: bool) -> ModelExport:
    from trainyard.inference.exporters import DEFAULT_FORMAT, FormatRefused, exporter
    from trainyard.inference.exporters.archive import export_format
    from trainyard.inference.snapshots import choose_snapshot

    chosen = exporter(body.format)  # FormatRefused (422) listing the formats
    if confined and chosen.name != DEFAULT_FORMAT:
        raise FormatRefused(f"model {model_id} has a custom network, which exports to {DEFAULT_FORMAT} only (its "
                            "code runs in a sandbox, and the other formats convert it outside)")
    snapshot = choose_snapshot(job_dir, body.epoch)
    output = archive_path(job_dir, chosen.name, snapshot.path.stem)
    manifest: dict = {}
    if confined:  # user code: built in a sandboxed child, never here
        from trainyard.inference.export_isolated import export_in_child

        export_in_child(job_dir, snapshot.epoch, output, force=body.force)
    else:
        manifest = export_format(job_dir, snapshot.epoch, chosen, output, calibration_images=body.calibration_images,
                                 force=body.force).manifest
    figures = {k: manifest[k] for k in ModelExport.model_fields if k in manifest and k != "export_format"}
    return ModelExport(export_format=chosen.name, epoch=snapshot.epoch, snapshot=snapshot.why,
                       archive_bytes=output.stat().st_size, manifest=manifest, **figures,
                       download=f"/api/models/{model_id}/export/{chosen.name}?epoch={_epoch_text(snapshot.epoch)}")


def _epoch_text(epoch: float) -> str:
    """An epoch in a URL, exactly (3, 2.5; never 1.23457e+06)."""
    return str(int(epoch)) if float(epoch).is_integer() else repr(float(epoch))


def archive_path(job_dir: Path, fmt: str, checkpoint_stem: str) -> Path:
    """Where a format's archive of one snapshot is kept (the server's part of the job folder)."""
    return JobFolder(job_dir).exports / f"{checkpoint_stem}-{fmt}.tar.gz"


@router.get("/models/{model_id}/export/{fmt}", response_class=FileResponse)
def download_export(ctx: Ctx, model_id: str, fmt: FormatName, epoch: float | None = None) -> FileResponse:
    """The archive POST .../export wrote for that format and snapshot (404 until it has)."""
    from trainyard.inference.snapshots import choose_snapshot

    get_job_of_kind(ctx, model_id, "model")
    job_dir = ctx.manager.folder(model_id).path
    snapshot = choose_snapshot(job_dir, epoch)
    path = archive_path(job_dir, fmt, snapshot.path.stem)
    # A resumed job may write a snapshot again: an archive older than it is not that snapshot's.
    if not path.is_file() or path.stat().st_mtime < snapshot.path.stat().st_mtime:
        raise NotFound(f"model {model_id} has no {fmt} export of epoch {snapshot.epoch:g}: "
                       f"POST /api/models/{model_id}/export writes one")
    return FileResponse(path, media_type="application/gzip", filename=f"{_top(path)}-{fmt}.tar.gz")


def _top(path: Path) -> str:
    """The archive's top folder: the name it downloads as, with its format."""
    with tarfile.open(path, "r:gz") as tar:
        first = tar.next()
    return first.name.rstrip("/").split("/")[0] if first is not None else path.stem
