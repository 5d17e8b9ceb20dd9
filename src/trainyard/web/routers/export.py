"""Download a model as a deployable archive, and import such an archive as a model.

GET /api/models/{id}/download?epoch=N gives the .tar.gz of that snapshot (the latest without
``epoch``), built on first request and kept in the job folder. POST /api/models/import takes
an archive upload (multipart field ``file``, optional ``name``) and creates a done model job.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from trainyard.jobs.kinds.imported import import_model_archive
from trainyard.jobs.views.documents import job_detail
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.web.schemas import jobs as schemas
from trainyard.web.uploads import save_upload

router = APIRouter(prefix="/api", tags=["models"])


@router.get("/models/{model_id}/download", response_class=FileResponse)
def download_model(ctx: Ctx, model_id: str, epoch: float | None = None) -> FileResponse:
    """The model's deployable archive (ONNX, safetensors, scripts) for one snapshot epoch."""
    get_job_of_kind(ctx, model_id, "model")
    # torch: on first use, not at start-up. Built in a child process: a custom network is user
    # code, which never runs in the server.
    from trainyard.inference.export import cached_export
    from trainyard.inference.export_isolated import export_in_child

    path = cached_export(ctx.manager.folder(model_id).path, epoch, build=export_in_child)  # CheckpointError: 404
    filename = f"{_stem(path)}.tar.gz"
    return FileResponse(path, media_type="application/gzip", filename=filename)


def _stem(path: Path) -> str:
    """The archive's top folder name, which is also the name it downloads as."""
    with tarfile.open(path, "r:gz") as tar:
        first = tar.next()
    return first.name.rstrip("/") if first is not None else path.stem


@router.post("/models/import", status_code=201, response_model=schemas.ModelDetail)
async def import_model(ctx: Ctx, file: UploadFile = File(...), name: str | None = Form(None)) -> schemas.JobDetail:
    """Create a model job (status done) from an archive downloaded from trainyard."""
    path = await save_upload(file, ctx.settings.uploads_dir, ctx.settings.max_upload_mb * 2**20)
    try:
        job = await run_in_threadpool(import_model_archive, ctx, path, name or None)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)  # the upload's own folder
    return job_detail(ctx.manager, job)

