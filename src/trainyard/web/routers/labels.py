"""``PATCH /api/jobs/{id}``: a job's tags and notes (jobs/store/labels.py validates them), and
who sees it (``visibility``: private or team; its owner's or an admin's change only)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from trainyard.core.ownership import Visibility
from trainyard.jobs.store.labels import MAX_NOTES, set_labels
from trainyard.jobs.views.documents import job_detail
from trainyard.web.deps import Ctx, get_job_of_kind, get_job_to_change
from trainyard.web.schemas.jobs import AnyJobDetail, JobDetail

router = APIRouter(prefix="/api/jobs", tags=["jobs"])


class LabelsPatch(BaseModel):
    """Either or both; a field left out keeps its value, ``[]`` and ``""`` clear it."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = Field(None, max_length=64, description="1 to 32 of a-z 0-9 . _ - : + each, 16 at most")
    notes: str | None = Field(None, max_length=MAX_NOTES)
    visibility: Visibility | None = None


@router.patch("/{job_id}", response_model=AnyJobDetail)
def patch_job(ctx: Ctx, job_id: str, body: LabelsPatch) -> JobDetail:
    """Set the job's tags, notes and/or visibility; answers the whole job, with them."""
    get_job_to_change(ctx, job_id)
    set_labels(ctx.store, job_id, tags=body.tags, notes=body.notes)
    if body.visibility is not None:
        ctx.store.update_job(job_id, visibility=body.visibility)
    return job_detail(ctx.manager, get_job_of_kind(ctx, job_id))
