"""/api/models/{id}/...: classify images (top-k, layer views, Grad-CAM), detect and segment them, classify many,
top-N per class and evaluate, with their results.

Single images are answered in the request, from a cached loaded model (see inference/loader.py),
or for a custom network from its worker process (inference/worker_pool.py).
Classify-many, top-N and evaluate run as jobs (kinds ``classify-many`` and ``evaluate``); their
results are read back here while they run and after.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import UploadFile

from trainyard.core.errors import InvalidInput, NotFound, TooLarge
from trainyard.core.paths import resolve_inside
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.inference import create_inference_job, inference_jobs
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.documents import job_brief, job_detail
from trainyard.web.deps import Ctx, get_job_of_kind, wake_scheduler
from trainyard.web.json_body import parse_json_object
from trainyard.web.routers.inference_results import results_router, upload_source
from trainyard.web.schemas import inference as more
from trainyard.web.schemas import jobs as schemas
from trainyard.web.uploads import safe_filename

router = APIRouter(prefix="/api/models", tags=["inference"])
router.include_router(results_router)
MAX_IMAGES = 64  # per classify request; more is a classify-many job
# Forward passes run one at a time on one thread of their own: a pass already uses every core,
# and torch's per-thread OpenMP team stays warm instead of being built in each pool thread.
INFERENCE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainyard-inference")

CLASSIFY_BODY = {"requestBody": {"content": {
    "multipart/form-data": {"schema": {"type": "object", "properties": {
        "images": {"type": "array", "items": {"type": "string", "format": "binary"}}}}},
    "application/json": {"schema": {"type": "object", "properties": {
        "paths": {"type": "array", "items": {"type": "string"}}}}}}}}


async def _images_of(ctx: Context, request: Request) -> list[tuple[str, bytes | Path]]:
    """(name, uploaded bytes or a checked path) of each image in a multipart or JSON request."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form(max_files=MAX_IMAGES + 1)
        files = [f for key in ("images", "image", "file") for f in form.getlist(key) if isinstance(f, UploadFile)]
        limit = ctx.settings.max_upload_mb * 2**20
        if any((f.size or 0) > limit for f in files):
            raise TooLarge(f"an image is larger than the limit of {ctx.settings.max_upload_mb} MiB")
        found: list[tuple[str, bytes | Path]] = [
            (safe_filename(f.filename, "image"), await f.read()) for f in files]
    else:
        body = parse_json_object(await request.body())
        paths = body.get("paths")
        if not isinstance(paths, (list, type(None))):
            raise InvalidInput("paths must be a list of image paths")
        found = [(str(p), _allowed_file(ctx, str(p))) for p in paths or []]
    if not found:
        raise InvalidInput("no image given: upload files as 'images', or send {\"paths\": [...]}")
    if len(found) > MAX_IMAGES:
        raise TooLarge(f"at most {MAX_IMAGES} images a request; use classify-many for more")
    return found


def _allowed_file(ctx: Context, path: str) -> Path:
    resolved = resolve_inside(path, ctx.settings.allowed_roots, must_exist=False)
    if not resolved.is_file():
        raise NotFound(f"{path} is not a file")
    return resolved


@router.post("/{model_id}/classify", openapi_extra=CLASSIFY_BODY, response_model=more.Classified)
async def classify(ctx: Ctx, request: Request, model_id: str, epoch: float | None = None,
                   top: int = Query(5, ge=1, le=100), visualize: bool = False,
                   saliency: bool = False) -> more.Classified:
    """Top classes of uploaded images (multipart ``images``) or of files inside the data roots
    (JSON ``{"paths": [...]}``), by the latest snapshot or ``epoch``. ``visualize`` adds each
    layer's weights, activations and statistics; ``saliency`` (and ``visualize``) a Grad-CAM map."""
    get_job_of_kind(ctx, model_id, "model")
    sources = await _images_of(ctx, request)

    from trainyard.web.classify_work import classify_sources  # torch: on first use, not at start-up

    work = partial(classify_sources, ctx, model_id, epoch, sources, top=top, visualize=visualize,
                   saliency=saliency)
    return await asyncio.get_running_loop().run_in_executor(INFERENCE, work)


@router.post("/{model_id}/detect", openapi_extra=CLASSIFY_BODY, response_model=more.Detected)
async def detect(ctx: Ctx, request: Request, model_id: str, epoch: float | None = None,
                 threshold: float = Query(0.5, ge=0, le=1), visualize: bool = False) -> more.Detected:
    """Boxes of a detection model in uploaded images (multipart ``images``) or files inside the
    data roots (JSON ``{"paths": [...]}``), in each image's own pixels, best first, scores at
    or above ``threshold``. ``visualize`` adds the first image's backbone and neck layers
    (weights, activations, statistics) as ``results[0].visualization.layers``."""
    get_job_of_kind(ctx, model_id, "model")
    sources = await _images_of(ctx, request)

    from trainyard.web.detect_work import detect_sources  # torch: on first use, not at start-up

    work = partial(detect_sources, ctx, model_id, epoch, sources, threshold=threshold, visualize=visualize)
    return await asyncio.get_running_loop().run_in_executor(INFERENCE, work)


@router.post("/{model_id}/segment", openapi_extra=CLASSIFY_BODY, response_model=more.Segmented)
async def segment(ctx: Ctx, request: Request, model_id: str, epoch: float | None = None) -> more.Segmented:
    """Masks of a segmentation model for uploaded images (multipart ``images``) or files inside
    the data roots (JSON ``{"paths": [...]}``): per image each class's share of its pixels and
    its mask, a PNG data URI of the 8-bit index PNG ``trainyard segment`` writes (the same bytes),
    at the image's own size, each pixel its class's index."""
    get_job_of_kind(ctx, model_id, "model")
    sources = await _images_of(ctx, request)

    from trainyard.web.segment_work import segment_sources  # torch: on first use, not at start-up

    work = partial(segment_sources, ctx, model_id, epoch, sources)
    return await asyncio.get_running_loop().run_in_executor(INFERENCE, work)


class EvaluateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    split: str = Field("val", pattern="^(val|test|train)$")
    epoch: float | None = None
    batch_size: int = Field(64, ge=1, le=4096)


@router.post("/{model_id}/evaluate", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.InferenceJob)
def evaluate(ctx: Ctx, model_id: str, request: EvaluateRequest | None = None) -> schemas.InferenceJob:
    """Queue an evaluation of the model on its dataset's val (or test) split."""
    request = request or EvaluateRequest()
    get_job_of_kind(ctx, model_id, "model")
    job = create_inference_job(ctx, "evaluate", model_id, epoch=request.epoch, split=request.split,
                               batch_size=request.batch_size)
    return _queued(ctx, job, f"/models/{model_id}/evaluations/{job.id}")


class ManyRequest(BaseModel):
    """Classify-many options (JSON, or form fields beside an uploaded ``file``)."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = None  # a list file or a folder inside the data roots
    image_root: str | None = None  # where a list's relative paths start
    split: str | None = Field(None, pattern="^(train|val|test)$")  # the model's dataset split
    epoch: float | None = None
    top: int = Field(5, ge=1, le=100)
    top_n: int = Field(12, ge=0, le=100)
    batch_size: int = Field(64, ge=1, le=4096)
    threshold: float = Field(0.5, ge=0, le=1)  # a detection model's smallest box score kept


def _queued(ctx: Context, job: Job, page: str) -> schemas.InferenceJob:
    """The inference job just queued, with the page that shows it."""
    return schemas.InferenceJob(**dict(job_detail(ctx.manager, job)), page=page)


async def _many(ctx: Context, request: Request, model_id: str, top_n: int, anchor: str = "") -> schemas.InferenceJob:
    get_job_of_kind(ctx, model_id, "model")
    fields, upload = await upload_source(ctx, request)
    fields.setdefault("top_n", top_n)
    options = ManyRequest.model_validate(fields)
    source = dict(upload or {})
    if options.path:
        resolved = resolve_inside(options.path, ctx.settings.allowed_roots)
        source = {"folder" if resolved.is_dir() else "list_file": str(resolved)}
    if options.split:
        source["split"] = options.split
    job = create_inference_job(ctx, "classify-many", model_id, epoch=options.epoch, image_root=options.image_root,
                               top=options.top, top_n=options.top_n, batch_size=options.batch_size,
                               threshold=options.threshold, **source)
    return _queued(ctx, job, f"/models/{model_id}/classify-many/{job.id}{anchor}")


@router.post("/{model_id}/classify-many", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.InferenceJob)
async def classify_many(ctx: Ctx, request: Request, model_id: str) -> schemas.InferenceJob:
    """Queue a job classifying a list file (``path [label]`` lines), a folder or an archive:
    JSON ``{"path": ..., "image_root": ...}``, ``{"split": "val"}``, or a multipart ``file``
    (a list or a .zip/.tar(.gz)) with the same fields as form fields. For a detection model the
    job detects (boxes per image at or above ``threshold``; its rows give ``boxes``)."""
    return await _many(ctx, request, model_id, top_n=12)


@router.post("/{model_id}/top-n", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.InferenceJob)
async def top_n(ctx: Ctx, request: Request, model_id: str) -> schemas.InferenceJob:
    """Classify-many whose point is, per class, the ``top_n`` images the network is surest of."""
    return await _many(ctx, request, model_id, top_n=12, anchor="#top-n")


@router.get("/{model_id}/inference", response_model=more.InferenceList)
def list_inference(ctx: Ctx, model_id: str) -> more.InferenceList:
    """The model's classify-many and evaluate jobs, newest first."""
    get_job_of_kind(ctx, model_id, "model")
    return more.InferenceList(jobs=[job_brief(job) for job in inference_jobs(ctx, model_id)])
