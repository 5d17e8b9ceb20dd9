"""/api/datasets: create (from server folders, lists or an uploaded archive), append, explore."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi.responses import FileResponse, Response
from pydantic import ValidationError

from trainyard.core.errors import Conflict, InvalidInput, NotFound, UserError
from trainyard.core.paths import resolve_inside
from trainyard.core.status import Status
from trainyard.datasets.detection.explore import image_page, is_detection_split
from trainyard.datasets.images import ImageError, png_bytes
from trainyard.datasets.preview import Window, display_image, preview_resize
from trainyard.datasets.segmentation import explore as segmentation_explore
from trainyard.datasets.segmentation.overlay import OPACITY
from trainyard.datasets.sources import iter_images
from trainyard.datasets.spec import DatasetSpec
from trainyard.datasets.storage import SPLITS, SplitReader, open_split
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.dataset import append_dataset_job, create_dataset_job
from trainyard.jobs.kinds.documents import JobDetail
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.store import Job
from trainyard.jobs.views.documents import job_brief, job_detail
from trainyard.web import media
from trainyard.web.deps import Ctx, get_job_of_kind, wake_scheduler
from trainyard.web.json_body import parse_json_object
from trainyard.web.schemas import jobs as schemas
from trainyard.web.uploads import save_upload

router = APIRouter(prefix="/api/datasets", tags=["datasets"])
PAGE_MAX = 500


def _spec(fields: dict) -> DatasetSpec:
    return DatasetSpec.model_validate(fields)  # a ValidationError is a 422 (web/errors.py)


def _create(ctx: Context, make_job: Callable[[], Job], visibility: str | None = None) -> JobDetail:
    """The new job's document; made ``visibility`` (private unless "team": jobs/store/actor.py)."""
    with accounts.creating_with(visibility):
        return job_detail(ctx.manager, make_job())


@router.get("", response_model=schemas.DatasetList)
def list_datasets(ctx: Ctx) -> schemas.DatasetList:
    return schemas.DatasetList(datasets=[job_brief(j) for j in ctx.store.list_jobs(kind="dataset")])


@router.post("", status_code=201, dependencies=[Depends(wake_scheduler)], response_model=schemas.DatasetDetail)
def create_dataset(ctx: Ctx, fields: dict) -> JobDetail:
    """Build a dataset from folders or lists on the server (paths inside the data roots)."""
    visibility = fields.pop("visibility", None)
    spec = _spec(fields)
    return _create(ctx, lambda: create_dataset_job(ctx, spec), visibility)


def _discard_uploads(fields: dict) -> None:
    """Remove the files a refused request uploaded (each lies alone in its own folder)."""
    for key in ("train_archive", "val_archive"):
        if fields.get(key):
            shutil.rmtree(Path(fields[key]).parent, ignore_errors=True)


def _create_from_upload(ctx: Context, fields: dict, make_job: Callable[[], Job]) -> JobDetail:
    """Like _create, removing the uploaded files when the request is refused."""
    try:
        return _create(ctx, make_job, fields.pop("visibility", None))
    except (UserError, ValidationError):
        _discard_uploads(fields)
        raise


async def _fields_with_uploads(ctx: Context, spec_json: str, file: UploadFile | None,
                               val_file: UploadFile | None) -> dict:
    fields = parse_json_object(spec_json, "spec (the dataset options)")
    limit = ctx.settings.max_upload_mb * 2**20
    try:
        if file is not None and file.filename:
            fields["train_archive"] = str(await save_upload(file, ctx.settings.uploads_dir, limit))
        if val_file is not None and val_file.filename:
            fields["val_archive"] = str(await save_upload(val_file, ctx.settings.uploads_dir, limit))
    except UserError:  # too large (413) or empty
        _discard_uploads(fields)
        raise
    return fields


@router.post("/upload", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.DatasetDetail)
async def upload_dataset(ctx: Ctx, file: Annotated[UploadFile, File(description="zip or tar(.gz) of class folders")],
                         spec: Annotated[str, Form(description="JSON of the other dataset options")] = "{}",
                         val_file: Annotated[UploadFile | None, File()] = None) -> JobDetail:
    fields = await _fields_with_uploads(ctx, spec, file, val_file)
    return _create_from_upload(ctx, fields, lambda: create_dataset_job(ctx, _spec(fields)))


@router.get("/{dataset_id}", response_model=schemas.DatasetDetail)
def show_dataset(ctx: Ctx, dataset_id: str) -> JobDetail:
    return job_detail(ctx.manager, get_job_of_kind(ctx, dataset_id, "dataset"))


@router.post("/{dataset_id}/append", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.DatasetDetail)
def append_dataset(ctx: Ctx, dataset_id: str, fields: dict) -> JobDetail:
    """A new version with the images of another folder or list added."""
    get_job_of_kind(ctx, dataset_id, "dataset")
    visibility = fields.pop("visibility", None)
    return _create(ctx, lambda: append_dataset_job(ctx, dataset_id, fields), visibility)


@router.post("/{dataset_id}/append/upload", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.DatasetDetail)
async def append_upload(ctx: Ctx, dataset_id: str, file: Annotated[UploadFile, File()],
                        spec: Annotated[str, Form()] = "{}") -> JobDetail:
    get_job_of_kind(ctx, dataset_id, "dataset")
    fields = await _fields_with_uploads(ctx, spec, file, None)
    return _create_from_upload(ctx, fields, lambda: append_dataset_job(ctx, dataset_id, fields))


def _built_dataset(ctx: Context, dataset_id: str) -> Path:
    job = get_job_of_kind(ctx, dataset_id, "dataset")
    folder = ctx.manager.folder(job.id).dataset
    if job.status != Status.DONE or not folder.exists():
        raise Conflict(f"dataset {dataset_id} is {job.status}, not built yet")
    return folder


@router.get("/{dataset_id}/mean.png", **media.PNG)
def mean_image(ctx: Ctx, dataset_id: str):
    return FileResponse(_built_dataset(ctx, dataset_id) / "mean.png", media_type="image/png")


def _open(folder: Path, split: str) -> SplitReader:
    if split not in SPLITS:  # a name, never a path
        raise NotFound(f"no split {split!r}: splits are {', '.join(SPLITS)}")
    try:
        return open_split(folder, split)
    except FileNotFoundError as exc:
        raise NotFound(f"this dataset has no {split!r} split") from exc


@router.get("/{dataset_id}/images", response_model=schemas.ImagePage)
def list_images(ctx: Ctx, dataset_id: str, split: str = "train", label: int | None = None,
                offset: int = Query(0, ge=0), limit: int = Query(48, ge=1, le=PAGE_MAX)) -> schemas.ImagePage:
    """A page of a split's images (index and label), optionally of one class only. A detection
    split's images carry their boxes, and ``label`` is the number of boxes; a segmentation
    split's, the classes their mask holds."""
    folder = _built_dataset(ctx, dataset_id)
    reader = _open(folder, split)
    if is_detection_split(folder / split):
        return schemas.ImagePage.model_validate(image_page(folder / split, label, offset, limit))
    if segmentation_explore.is_segmentation_split(folder / split):  # each image with the classes its mask holds
        masked = segmentation_explore.image_page(folder / split, label, offset, limit)
        return schemas.ImagePage.model_validate(masked.model_dump())
    labels = reader.labels
    if labels.ndim == 2:  # a multi-label split's targets (datasets/multilabel/store.py): ``label`` picks its images
        if label is not None and not 0 <= label < labels.shape[1]:
            raise NotFound(f"no label {label}: this dataset's labels are 0..{labels.shape[1] - 1}")
        indices = range(len(labels)) if label is None else labels[:, label].nonzero()[0]
        page = [int(i) for i in indices[offset: offset + limit]]
        return schemas.ImagePage(split=split, total=len(indices), offset=offset, images=[
            schemas.ImageRef(index=i, label=int(labels[i].sum()), labels=labels[i].nonzero()[0].tolist())
            for i in page])
    indices = range(len(labels)) if label is None else (labels == label).nonzero()[0]
    page = [int(i) for i in indices[offset: offset + limit]]
    return schemas.ImagePage(split=split, total=len(indices), offset=offset,
                             images=[schemas.ImageRef(index=i, label=int(labels[i])) for i in page])


@router.get("/{dataset_id}/images/{split}/{index}.png", **media.PNG)
def image_png(ctx: Ctx, dataset_id: str, split: str, index: int,
              low: Annotated[int | None, Query(alias="min", ge=0, le=65535)] = None,
              high: Annotated[int | None, Query(alias="max", ge=0, le=65535)] = None):
    """A stored image as an 8-bit PNG. A 16-bit one is stretched from its own minimum to its
    maximum, or from ``min`` to ``max`` (stored values, given together); the window used is in
    the ``X-Display-Window`` header ("lo-hi", absent for an 8-bit image shown as it is)."""
    window = _window(low, high)
    reader = _open(_built_dataset(ctx, dataset_id), split)
    if not 0 <= index < len(reader):
        raise NotFound(f"{split} has {len(reader)} images; no image {index}")
    pixels, used = display_image(reader.read(index), window)  # a 16-bit image: a window, not clipped
    headers = {"Cache-Control": "max-age=86400"}  # a version never changes; a window is another URL
    if used is not None:
        headers["X-Display-Window"] = f"{used[0]:g}-{used[1]:g}"
    return Response(png_bytes(pixels), media_type="image/png", headers=headers)


def _window(low: int | None, high: int | None) -> Window | None:
    if low is None and high is None:
        return None
    if low is None or high is None:
        raise InvalidInput("give both min and max of the display window, or neither")
    if low >= high:
        raise InvalidInput(f"the display window's min ({low}) must be below its max ({high})")
    return float(low), float(high)


PREVIEW_TRIES = 20  # a folder's first few image files are tried: one of them may be broken


def _folder_images(ctx: Context, folder: str) -> list[str]:
    """The first image files under a folder inside the data roots (for the resize preview)."""
    root = resolve_inside(folder, ctx.settings.allowed_roots)
    # The dataset builder's walk: a link out of the folder is skipped, never followed.
    paths = [str(p) for p in itertools.islice(iter_images(root, root), PREVIEW_TRIES)]
    if not paths:
        raise NotFound(f"no image found under {folder}")
    return paths


@router.post("/preview", **media.PNG)
async def resize_preview(ctx: Ctx, width: Annotated[int, Form(ge=1, le=4096)] = 256,
                         height: Annotated[int, Form(ge=1, le=4096)] = 256,
                         channels: Annotated[int, Form()] = 3,
                         resize: Annotated[str, Form()] = "squash",
                         folder: Annotated[str | None, Form()] = None,
                         image: Annotated[UploadFile | None, File()] = None):
    """The chosen resize mode applied to a sample image (uploaded, or the first readable one in a folder)."""
    if image is not None and image.filename:
        samples: list[bytes] | list[str] = [await image.read(ctx.settings.max_upload_mb * 2**20)]
    elif folder:
        samples = _folder_images(ctx, folder)
    else:
        raise InvalidInput("give an image or a folder to preview")
    problem = None
    for sample in samples:
        data = sample if isinstance(sample, bytes) else Path(sample).read_bytes()
        try:
            return Response(preview_resize(data, width, height, channels, resize), media_type="image/png")
        except ImageError as exc:
            problem = exc  # an unreadable file in a folder: try the next one
        except ValueError as exc:  # an unknown resize mode or channel count
            raise InvalidInput(str(exc)) from exc
    raise problem or InvalidInput("no usable image to preview")


@router.get("/{dataset_id}/images/{split}/{index}/overlay.png", **media.PNG)
def overlay_png(ctx: Ctx, dataset_id: str, split: str, index: int,
                opacity: float = Query(OPACITY, ge=0, le=1)):
    """A segmentation split's stored image with its mask laid over it in the class colours
    (datasets/segmentation/overlay.py: the Segment page's)."""
    folder = _built_dataset(ctx, dataset_id)
    _open(folder, split)  # a known split that this dataset has
    if not segmentation_explore.is_segmentation_split(folder / split):
        raise NotFound(f"dataset {dataset_id} has no masks: it is not a segmentation dataset")
    try:
        pixels = segmentation_explore.overlay_image(folder / split, index, opacity)
    except IndexError as exc:
        raise NotFound(str(exc)) from None
    return Response(png_bytes(pixels), media_type="image/png",
                    headers={"Cache-Control": "max-age=86400"})  # a version never changes
