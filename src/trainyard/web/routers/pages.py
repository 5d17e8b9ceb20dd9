"""The browser pages: Jinja2 templates over the same domain functions as the API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates

from trainyard.datasets.resize import RESIZE_MODES
from trainyard.jobs.views import job_brief, job_detail
from trainyard.web.auth import COOKIE, token_matches
from trainyard.web.deps import Ctx, get_job_of_kind
from trainyard.core import formatting

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent.parent / "templates")
formatting.install(templates.env)


def render(request: Request, name: str, **context) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, ctx: Ctx):
    return render(request, "home.html", **_job_tables(ctx))


@router.get("/partials/jobs", response_class=HTMLResponse)
def job_tables(request: Request, ctx: Ctx):
    """The home page's tables alone, refreshed by htmx every few seconds."""
    return render(request, "_job_tables.html", **_job_tables(ctx))


def _job_tables(ctx) -> dict:
    jobs = [job_brief(j) for j in ctx.store.list_jobs()]
    return {"datasets": [j for j in jobs if j["kind"] == "dataset"],
            "models": [j for j in jobs if j["kind"] == "model"],
            "gpus": ctx.pools.gpus}


@router.get("/datasets/new", response_class=HTMLResponse)
def new_dataset(request: Request, ctx: Ctx, parent: str | None = None):
    parent_job = get_job_of_kind(ctx, parent, "dataset") if parent else None
    return render(request, "dataset_new.html", resize_modes=RESIZE_MODES, parent=parent_job,
                  roots=[str(r) for r in ctx.settings.allowed_roots])


@router.get("/datasets/{dataset_id}", response_class=HTMLResponse)
def show_dataset(request: Request, ctx: Ctx, dataset_id: str):
    job = get_job_of_kind(ctx, dataset_id, "dataset")
    return render(request, "dataset_show.html", job=job_detail(ctx.manager, job),
                  spec=_read_spec(ctx, dataset_id))


def _read_spec(ctx, job_id: str) -> dict:
    from trainyard.core.files import read_json

    try:
        return read_json(ctx.manager.folder(job_id).spec)
    except FileNotFoundError:
        return {}


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/", error: str | None = None):
    return render(request, "login.html", next=next, error=error)


@router.post("/login")
def login(request: Request, token: Annotated[str, Form()], next: Annotated[str, Form()] = "/"):
    expected = request.app.state.ctx.settings.auth_token
    if not expected or not token_matches(token, expected):
        return render(request, "login.html", next=next, error="That token is not right.")
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
    return response
