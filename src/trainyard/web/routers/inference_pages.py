"""Pages for using a model: classify one image (with layer views and Grad-CAM), classify many,
top-N, evaluate (GET /models/{id}/classify), and the result pages of those jobs.

The pages hold little more than forms and empty panels; static/classify*.js fills them from
the same /api/models/{id}/... endpoints scripts use.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from trainyard.artifact.checkpoint import checkpoint_epochs
from trainyard.core.vocabulary import DEFAULT_TASK
from trainyard.datasets.storage import split_names
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.inference import inference_jobs
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.views.documents import job_brief, job_detail
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.web.routers.inference_results import job_folder
from trainyard.web.routers.pages import templates  # one environment: every page's filters and globals

router = APIRouter(include_in_schema=False)
# The page that uses a model, by its task (core/tasks.py): a class per image, or boxes.
PAGES = {"classification": "classify.html", "detection": "detect.html", "multilabel": "classify.html",
         "segmentation": "segment.html"}


def _model(ctx: Context, model_id: str) -> dict:
    """The model's document as the page's templates read it (a dict: absent fields stay absent)."""
    return job_detail(ctx.manager, get_job_of_kind(ctx, model_id, "model")).model_dump()


def _splits(model: dict) -> list[str]:
    """The splits of the model's dataset to evaluate on, while its folder is there (an imported
    model's spec names none); ``model``: its job_detail, whose spec was read already."""
    spec = MODEL.read_or_none(model["spec"])
    folder = spec.dataset_dir if spec else None
    return [s for s in split_names(Path(folder)) if s != "train"] if folder and Path(folder).is_dir() else []


@router.get("/models/{model_id}/classify", response_class=HTMLResponse)
def classify_page(request: Request, ctx: Ctx, model_id: str, epoch: float | None = None):
    """Classify one image or many, top-N and evaluate, with this model's snapshots."""
    model = _model(ctx, model_id)
    jobs = [job_brief(job).model_dump() for job in inference_jobs(ctx, model_id)]
    # The checkpoint files themselves: a snapshot is usable as soon as its file is complete.
    snapshots = list(checkpoint_epochs(ctx.manager.folder(model_id).path))
    page = PAGES[model.get("task") or DEFAULT_TASK]  # boxes, not classes
    return templates.TemplateResponse(request, page, {
        "model": model, "snapshots": snapshots, "splits": _splits(model), "jobs": jobs, "epoch": epoch,
        "roots": [str(r) for r in ctx.settings.allowed_roots]})


@router.get("/models/{model_id}/classify-many/{job_id}", response_class=HTMLResponse)
def many_page(request: Request, ctx: Ctx, model_id: str, job_id: str):
    """A classify-many job: progress, paged results, accuracy and confusion, top-N per class."""
    job, folder, spec = job_folder(ctx, model_id, job_id, "classify-many")
    return templates.TemplateResponse(request, "many_show.html", {
        "model": _model(ctx, model_id), "job": job_detail(ctx.manager, job).model_dump(), "spec": spec})


@router.get("/models/{model_id}/evaluations/{job_id}", response_class=HTMLResponse)
def evaluation_page(request: Request, ctx: Ctx, model_id: str, job_id: str):
    """An evaluation: accuracy, per-class table, confusion heat map, most-confused pairs."""
    job, folder, spec = job_folder(ctx, model_id, job_id, "evaluate")
    return templates.TemplateResponse(request, "evaluate_show.html", {
        "model": _model(ctx, model_id), "job": job_detail(ctx.manager, job).model_dump(), "spec": spec})
