"""The browser pages: Jinja2 templates over the same domain functions as the API.

Pages render what the database and job folders hold at load time; the scripts in static/ keep
them live (job events over SSE, hardware figures by polling the API).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from trainyard.core import formatting
from trainyard.core.vocabulary import DEFAULT_TASK, RESIZE_MODES
from trainyard.datasets.segmentation.overlay import class_colours
from trainyard.datasets.segmentation.spec_rules import TOLD_FORMATS
from trainyard.datasets.sources import IMAGE_EXTENSIONS
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.dataset import version_name
from trainyard.jobs.kinds.registry import DATASET, MODEL, spec_as_written
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store import labels
from trainyard.jobs.views import listing_query
from trainyard.jobs.views.documents import job_detail, list_briefs
from trainyard.web import listing, model_form, model_page
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.web.model_start import grey_previous

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent.parent / "templates")
formatting.install(templates.env)
VERSION_HEADER = "X-Jobs-Version"  # what the tables show; home.js sends it back as ``since``
REDRAW_S = 30
templates.env.filters["num"] = model_form.as_text  # epochs as 3 or 2.5, never 3.0
# A setting's name and value as the job page words them ("Base learning rate"), on every page.
templates.env.filters.update(setting_label=model_page.label, setting_text=model_page.text)
templates.env.globals["acting_user"] = accounts.current  # the top bar's name, sign-out, admin links
templates.env.globals["class_colours"] = class_colours  # a mask's colours, for the legends and segment.js
# What a dataset's page adds for its task (core/tasks.py): the statistics its build stored.
DATASET_FRAGMENTS = {"classification": None, "detection": "_dataset_detection.html",
                     "multilabel": "_dataset_multilabel.html", "segmentation": "_dataset_segmentation.html"}


def render(request: Request, name: str, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context)


# -- home ----------------------------------------------------------------------------------------

@router.get("/", response_class=HTMLResponse)
def home(request: Request, ctx: Ctx, query: Annotated[listing.Query, Depends()]):
    return render(request, "home.html", version=_mark(ctx), **_job_tables(ctx, query))


@router.get("/partials/jobs", response_class=HTMLResponse)
def job_tables(request: Request, ctx: Ctx, query: Annotated[listing.Query, Depends()],
               since: str | None = None):
    """The home page's tables alone, refreshed by htmx every few seconds.

    ``since`` is the version (response header) of what the page shows: when no job was added,
    changed or deleted since, the answer is an empty 204 that htmx leaves alone, so an idle
    refresh costs two indexed queries whatever the number of jobs. Every REDRAW_S the tables
    are drawn anyway, for the ages and elapsed times that move with the clock alone.
    """
    mark = _mark(ctx)
    if since == mark:
        return Response(status_code=204)
    response = render(request, "_job_tables.html", **_job_tables(ctx, query))
    response.headers[VERSION_HEADER] = mark
    return response


def _mark(ctx: Context) -> str:
    return f"{listing_query.version(ctx.store)}-{int(time.time() // REDRAW_S)}"


def _job_tables(ctx: Context, query: listing.Query) -> dict:
    datasets, models = (listing_query.job_page(ctx.store, query.for_kind(k)) for k in ("dataset", "model"))
    names = listing_query.names_of(ctx.store, {j["parent"] for j in datasets.jobs + models.jobs if j["parent"]})
    classes = listing_query.classes_of(ctx.store, {j["parent"] for j in models.jobs if j["parent"]})
    gpu_labels = {g.resource: f"GPU {g.index}" for g in ctx.pools.gpus}
    shown = datasets.jobs + models.jobs
    listing.add_cells(shown, names, gpu_labels, classes)
    listing.add_labels(shown, labels.labels_of(ctx.store, [j["id"] for j in shown]))
    return {"datasets": listing.arrange(datasets.jobs, query.group, names),
            "models": listing.arrange(models.jobs, query.group, names),
            "pages": {"dataset": datasets, "model": models}, "query": query,
            "status_filters": listing.STATUS_FILTERS, "groups": listing.GROUPS, "tags": labels.all_tags(ctx.store)}


@router.get("/system", response_class=HTMLResponse)
def system_page(request: Request, ctx: Ctx):
    """The devices and, in cluster mode, the cluster's nodes (system.js reads /api/system)."""
    return render(request, "system.html", backend=ctx.settings.cluster)


# -- datasets ------------------------------------------------------------------------------------

@router.get("/datasets/new", response_class=HTMLResponse)
def new_dataset(request: Request, ctx: Ctx, parent: str | None = None):
    parent_job = get_job_of_kind(ctx, parent, "dataset") if parent else None
    # The name an empty Name field gets (jobs/kinds/dataset.py), shown as its placeholder.
    version = (DATASET.spec_of(ctx.manager.folder(parent_job.id)).dataset_version + 1) if parent_job else 2
    return render(request, "dataset_new.html", resize_modes=RESIZE_MODES, parent=parent_job,
                  suggested=version_name(parent_job.name, version) if parent_job else "flowers",
                  roots=[str(r) for r in ctx.settings.allowed_roots], segmentation_formats=TOLD_FORMATS)


@router.get("/datasets/{dataset_id}", response_class=HTMLResponse)
def show_dataset(request: Request, ctx: Ctx, dataset_id: str):
    job = get_job_of_kind(ctx, dataset_id, "dataset")
    parent = ctx.store.get_job(job.parent_id) if job.parent_id else None
    detail = job_detail(ctx.manager, job).model_dump()
    return render(request, "dataset_show.html", job=detail,
                  fragment=DATASET_FRAGMENTS[detail.get("task") or DEFAULT_TASK],
                  parent_name=parent.name if parent else None,
                  spec=DATASET.find_spec(ctx.manager.folder(dataset_id)),
                  image_extensions=", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS)))


# -- models --------------------------------------------------------------------------------------

@router.get("/models/new", response_class=HTMLResponse)
def new_model(request: Request, ctx: Ctx, dataset: str | None = None, clone: str | None = None):
    """The new-model form; ``clone=ID`` fills it with that model's settings."""
    source = get_job_of_kind(ctx, clone, "model") if clone else None
    values = model_form.form_values(ctx, MODEL.find_spec(ctx.manager.folder(source.id)) if source else None,
                                    source.needs if source else None)
    briefs = [brief.model_dump() for brief in list_briefs(ctx.store)]
    offered = model_form.choices(ctx, briefs)
    if not values["datasets"]:
        values["datasets"] = [dataset] if dataset else model_form.default_dataset(offered["datasets"])
    model_form.preselect_network(values, offered["datasets"])
    grey_previous(offered["previous"], offered["datasets"], values["datasets"])  # for the chosen dataset
    chosen = next((d for d in offered["datasets"] if d["id"] in values["datasets"][:1]), None)
    if source:
        values["name"] = model_form.next_name(source.name, {j["name"] for j in briefs})
    return render(request, "model_new.html", form=values, clone=source, chosen=chosen, **offered)


@router.get("/models/{model_id}", response_class=HTMLResponse)
def show_model(request: Request, ctx: Ctx, model_id: str):
    job = job_detail(ctx.manager, get_job_of_kind(ctx, model_id, "model")).model_dump()
    written = spec_as_written(ctx.manager.folder(model_id))  # its settings as given, every one
    dataset = ctx.store.get_job(job["dataset"]) if job["dataset"] else None
    gpu_labels = {g.resource: g.label for g in ctx.pools.gpus}
    resources = [gpu_labels.get(r, r) for r in (job["summary"] or {}).get("resources", [])]
    extra = {"Hardware": [("Devices", ", ".join(resources))]} if resources else None
    return render(request, "model_show.html", job=job, spec=written, dataset=dataset,
                  settings_groups=model_page.settings_groups(written, extra,
                                                             model_page.seed_used(ctx.manager.folder(model_id).path)),
                  timeline=model_page.timeline(job["history"], job["finished_at"], status=job["status"]),
                  actions=model_page.actions(job))
