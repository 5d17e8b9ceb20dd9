"""Results of classify-many and evaluate jobs, under /api/models/{id}/... (included by
inference.py): status and summary, paged rows, the CSV, top-N per class, thumbnails, and the
evaluation document. Everything is read from the job folder, so it works while the job runs.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import Response, StreamingResponse
from PIL import Image

from trainyard.core import jobfiles
from trainyard.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from trainyard.core.paths import JobFolder, is_inside
from trainyard.datasets.images import ImageError, load_image, load_image_bytes, to_pil
from trainyard.datasets.storage import open_split
from trainyard.inference import results
from trainyard.inference.spec import InferenceSpec
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.documents import job_detail
from trainyard.web import media
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.web.json_body import parse_json_object
from trainyard.web.schemas import inference as more
from trainyard.web.uploads import save_upload

results_router = APIRouter()
THUMBNAIL = 160  # pixels, the longer side
DRAWN = 800  # the longer side of an image drawn with its boxes
MAX_IMAGE_BYTES = 64 << 20  # one image of an uploaded archive, as the job unpacked it
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz")


async def upload_source(ctx: Context, request: Request) -> tuple[dict, dict | None]:
    """(the request's fields, ``{"archive"|"list_file": saved path}`` of an uploaded ``file``)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        body = await request.body()
        fields = parse_json_object(body)
        return fields, None
    form = await request.form(max_files=2)
    fields = {k: v for k, v in form.multi_items() if isinstance(v, str) and v.strip()}
    upload = form.get("file")
    if upload is None or isinstance(upload, str) or not upload.filename:
        return fields, None
    path = await save_upload(upload, ctx.settings.uploads_dir, ctx.settings.max_upload_mb * 2**20)
    is_archive = path.name.lower().endswith(ARCHIVE_SUFFIXES) or zipfile.is_zipfile(path) or tarfile.is_tarfile(path)
    return fields, {"archive" if is_archive else "list_file": str(path)}


def job_folder(ctx: Context, model_id: str, job_id: str, kind: str) -> tuple[Job, Path, InferenceSpec]:
    """(job, folder, spec) of an inference job of this model; 404 otherwise."""
    job = get_job_of_kind(ctx, job_id, kind)
    folder = ctx.manager.folder(job.id)
    spec = get_kind(kind).spec_of(folder)
    if spec.model_id != model_id:
        raise NotFound(f"no {kind} job {job_id!r} of model {model_id!r}")
    return job, folder.path, spec


@results_router.get("/{model_id}/classify-many/{job_id}", response_model=more.ManyStatus)
def many_status(ctx: Ctx, model_id: str, job_id: str) -> more.ManyStatus:
    """The job, what it reads, and (once done) its summary: accuracy, confusion, top-N."""
    job, folder, spec = job_folder(ctx, model_id, job_id, "classify-many")
    return more.ManyStatus(job=job_detail(ctx.manager, job), source=results.read_source(folder),
                           summary=results.read_summary(folder), rows=results.row_count(folder),
                           csv=f"/api/models/{model_id}/classify-many/{job_id}/results.csv")


@results_router.get("/{model_id}/classify-many/{job_id}/results", response_model=more.ResultPage)
def many_rows(ctx: Ctx, model_id: str, job_id: str, offset: int = Query(0, ge=0),
              limit: int = Query(50, ge=1, le=1000)) -> more.ResultPage:
    """A page of per-image results: ``{row, image, label, predictions, error}``; a detection
    model's: ``{row, image, boxes: [{label, score, box}], error}``, boxes in the image's pixels."""
    _, folder, spec = job_folder(ctx, model_id, job_id, "classify-many")
    rows = results.read_rows(folder, offset, limit, results.row_parser(spec.task))  # parsed from results.csv
    return more.ResultPage(total=results.row_count(folder), offset=offset,
                           rows=[more.ResultRow.model_validate(row) for row in rows])


@results_router.get("/{model_id}/classify-many/{job_id}/results.csv", response_class=StreamingResponse)
def many_csv(ctx: Ctx, model_id: str, job_id: str):
    _, folder, _ = job_folder(ctx, model_id, job_id, "classify-many")
    try:  # the job wrote it: no link, no FIFO, served from the descriptor (core/jobfiles.py)
        fd = jobfiles.open_beneath(JobFolder(folder).work, results.RESULTS_CSV)
    except (FileNotFoundError, jobfiles.UnsafeFile):
        raise Conflict("the job has not written any result yet") from None
    return StreamingResponse(os.fdopen(fd, "rb"), media_type="text/csv",
                             headers={"Content-Disposition": f'attachment; filename="classify-{job_id}.csv"'})


@results_router.get("/{model_id}/classify-many/{job_id}/top-n", response_model=more.TopN)
def many_top_n(ctx: Ctx, model_id: str, job_id: str) -> more.TopN:
    """Per class, the images with the highest probability of that class, surest first."""
    job, folder, _ = job_folder(ctx, model_id, job_id, "classify-many")
    summary = results.read_summary(folder)
    if summary is None:
        raise Conflict(f"the job is {job.status}; top-N is ready when it is done")
    return more.TopN(classes=[more.TopClass.model_validate(c) for c in summary["top_n"]])  # summary.json's


@results_router.get("/{model_id}/classify-many/{job_id}/images/{row}", **media.PNG)
def many_image(ctx: Ctx, model_id: str, job_id: str, row: int = PathParam(ge=0), boxes: bool = False) -> Response:
    """A thumbnail of the image of one result row; ``boxes`` (a detection model's rows): the image
    at up to DRAWN pixels with the row's boxes drawn on it."""
    _, folder, spec = job_folder(ctx, model_id, job_id, "classify-many")
    found = results.read_row(folder, row, results.row_parser(spec.task))
    if found is None:
        raise NotFound(f"no result row {row}")
    if spec.split and spec.dataset_dir:
        pixels = open_split(Path(spec.dataset_dir), spec.split).read(row)
        image = to_pil(pixels)
    else:
        image = _row_image(ctx, folder, found["image"])
    size = THUMBNAIL
    if boxes and found.get("boxes") is not None:
        from trainyard.inference.detection.draw import draw_boxes

        image, size = draw_boxes(image, found["boxes"]), DRAWN
    image.thumbnail((size, size))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return Response(buf.getvalue(), media_type="image/png", headers={"Cache-Control": "max-age=3600"})


def _row_image(ctx: Context, folder: Path, name: str) -> Image.Image:
    base = (results.read_source(folder) or {}).get("image_base")
    path = (Path(base) / name if base else Path(name)).resolve()
    work = JobFolder(folder).work  # an uploaded archive's images, unpacked by the job
    if not any(is_inside(path, root) for root in [*ctx.settings.allowed_roots, work]):
        raise Forbidden(f"{name} is outside the data roots")
    try:
        if is_inside(path, work):  # the job's own files: read as every one is (core/jobfiles.py)
            relative = str(path.relative_to(work.resolve()))
            return load_image_bytes(jobfiles.read_bytes(work, relative, MAX_IMAGE_BYTES), 3)
        return load_image(path, 3)
    except jobfiles.UnsafeFile as exc:
        raise InvalidInput(f"{name}: {exc.strerror}") from None
    except ImageError as exc:
        raise InvalidInput(f"{name}: {exc}") from exc


@results_router.get("/{model_id}/evaluations/{job_id}", response_model=more.Evaluation)
def evaluation(ctx: Ctx, model_id: str, job_id: str) -> more.Evaluation:
    """The job and (once done) its evaluation: accuracy, per-class figures, confusion, pairs."""
    job, folder, spec = job_folder(ctx, model_id, job_id, "evaluate")
    return more.Evaluation(job=job_detail(ctx.manager, job), split=spec.split, dataset=spec.dataset_id,
                           epoch=spec.epoch, evaluation=results.read_evaluation(folder))
