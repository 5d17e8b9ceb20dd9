"""Creating inference jobs (classify-many, evaluate) for a model job.

The checkpoint is fixed when the job is created ("latest" means the latest snapshot now, even
while training goes on), image paths are checked against the data roots, and a split comes
from the model's own dataset. The API and the CLI both call these.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.core.errors import Conflict, validated
from trainyard.core.paths import resolve_inside
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK
from trainyard.datasets.storage import split_names
from trainyard.inference.snapshots import model_checkpoint
from trainyard.inference.spec import KINDS, InferenceSpec
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.errors import JobError
from trainyard.jobs.kinds.lookup import job_of_kind
from trainyard.jobs.kinds.registry import MODEL, get_kind
from trainyard.jobs.store.store import Job
from trainyard.training.spec import ModelSpec

PATH_FIELDS = ("list_file", "folder", "archive", "image_root")


def create_inference_job(ctx: Context, kind: str, model_id: str, *, epoch: float | None = None,
                         foreground: bool = False, **fields) -> Job:
    """Queue a ``kind`` job ("classify-many" or "evaluate") of a model at ``epoch`` (None: latest).
    A classify-many job of a detection model detects (boxes per image, above ``threshold``).

    ``fields`` are InferenceSpec fields: a source (list_file, folder, archive or split), top,
    top_n, batch_size, threshold. Raises JobError, PathNotAllowed, or the loader's NotReady / NotFound.
    """
    if kind not in KINDS:
        raise JobError(f"unknown inference job kind {kind!r}; valid: {', '.join(KINDS)}")
    model = job_of_kind(ctx.store, model_id, "model")
    folder = ctx.manager.folder(model.id)
    epoch, checkpoint = model_checkpoint(folder.path, epoch)
    for key in PATH_FIELDS:
        if fields.get(key):
            fields[key] = str(resolve_inside(fields[key], ctx.settings.allowed_roots))
    if fields.get("split"):
        fields.update(_dataset_split(MODEL.spec_of(folder), fields["split"]))
    what = fields.get("split") or "images"
    model_spec = MODEL.find_spec(folder)
    fields["task"] = getattr(model_spec, "task", None) or DEFAULT_TASK
    if task_traits(fields["task"]).boxes and kind != "evaluate" and fields.get("split"):
        raise JobError(f"a detection model finds boxes in a folder, a list or an archive of images; to "
                       f"score it on its dataset's {fields['split']} split, evaluate it")
    name = job_name(kind, fields["task"], what, model.name, epoch)
    spec = validated(InferenceSpec, {**fields, "kind": kind, "name": name,
                                     "model_id": model.id, "checkpoint": str(checkpoint), "epoch": epoch,
                                     "roots": [str(r) for r in ctx.settings.allowed_roots]})
    needs = {"pool": "inference"}  # never behind training: slots of its own, or a GPU (resources.py)
    job = ctx.manager.create(kind, spec.name, spec.model_dump(mode="json"), needs=needs, foreground=foreground)
    return job  # no parent_id: an inference job must not wait for a model that is still training


def _dataset_split(model_spec: ModelSpec, split: str) -> dict:
    """The spec fields naming the model's dataset; JobError if it lacks ``split``, Conflict (409)
    if the model has no dataset at all (an imported one)."""
    if not model_spec.dataset_dir:  # an imported archive: trained elsewhere, on data not here
        raise Conflict(f"this model has no dataset here (it was imported), so it has no {split} split to "
                       "evaluate; classify a folder or a list of labelled images instead")
    dataset_dir = Path(model_spec.dataset_dir)
    have = split_names(dataset_dir) if dataset_dir.is_dir() else []
    if split not in have:
        raise JobError(f"the model's dataset has no {split} split (it has: {', '.join(have) or 'none, deleted?'})")
    return {"dataset_dir": str(dataset_dir), "dataset_id": model_spec.dataset_id}


def inference_jobs(ctx: Context, model_id: str) -> list[Job]:
    """The classify-many and evaluate jobs of a model, newest first."""
    jobs = [job for kind in KINDS for job in ctx.store.list_jobs(kind=kind) if _model_of(ctx, job) == model_id]
    return sorted(jobs, key=lambda job: job.created_at, reverse=True)


def _model_of(ctx: Context, job: Job) -> str | None:
    spec = get_kind(job.kind).find_spec(ctx.manager.folder(job.id))
    return spec.model_id if spec else None


def job_name(kind: str, task: str, what: str, model: str, epoch: float) -> str:
    """The job's name, its page's title: named for what it does ("detect-many images: ..." for a
    detector's many-image job, whose kind is classify-many for every task)."""
    doing = f"{task_traits(task).verb}-many" if kind == "classify-many" else kind
    return f"{doing} {what}: {model} @ epoch {epoch:g}"
