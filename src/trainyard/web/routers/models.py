"""/api/models: create training jobs (one, or a sweep), list and show them, preview LR curves."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from trainyard.jobs.kinds.documents import JobDetail
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.jobs.views.documents import job_brief, job_detail
from trainyard.training.lr_policies import LRSettings, list_lr_policies, lr_curve
from trainyard.training.solvers import list_solvers
from trainyard.web.deps import Ctx, get_job_of_kind, wake_scheduler
from trainyard.web.schemas import inference as more
from trainyard.web.schemas import jobs as schemas

router = APIRouter(prefix="/api", tags=["models"])


@router.post("/models", status_code=201, dependencies=[Depends(wake_scheduler)],
             response_model=schemas.CreatedModels)
def create_models(ctx: Ctx, request: TrainRequest) -> schemas.CreatedModels:
    """Queue one training job per dataset x network x learning rate x batch size."""
    jobs = create_model_jobs(ctx, request)
    return schemas.CreatedModels(jobs=[job_detail(ctx.manager, job) for job in jobs])


@router.post("/models/check", response_model=schemas.Checked)
def check_models(ctx: Ctx, request: TrainRequest) -> schemas.Checked:
    """Everything creating these jobs would check (settings, and each distinct network on its
    dataset), creating nothing: the same refusals as POST /api/models, and the check is cached."""
    create_model_jobs(ctx, request, check_only=True)
    return schemas.Checked(ok=True)


@router.get("/models", response_model=schemas.ModelList)
def list_models(ctx: Ctx) -> schemas.ModelList:
    return schemas.ModelList(models=[job_brief(j) for j in ctx.store.list_jobs(kind="model")])


@router.get("/models/{model_id}", response_model=schemas.ModelDetail)
def show_model(ctx: Ctx, model_id: str) -> JobDetail:
    return job_detail(ctx.manager, get_job_of_kind(ctx, model_id, "model"))


class CurveRequest(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    lr: LRSettings = Field(default_factory=LRSettings)
    iterations: int = Field(1000, ge=1, le=10_000_000, description="optimizer steps in the whole training")
    points: int = Field(200, ge=2, le=2000)


@router.post("/solvers/lr-curve", response_model=more.LRCurve)
def learning_rate_curve(request: CurveRequest) -> more.LRCurve:
    """The learning rate over training, as [[percent of training, lr], ...], for a preview chart."""
    return more.LRCurve(points=lr_curve(request.lr, request.iterations, request.points))


@router.get("/solvers", response_model=more.Solvers)
def solvers() -> more.Solvers:
    """Solver types and learning-rate policies, with the settings each policy reads."""
    return more.Solvers(solvers=[more.Solver(**asdict(s)) for s in list_solvers()],
                        lr_policies=[more.LRPolicy(**asdict(p)) for p in list_lr_policies()])
