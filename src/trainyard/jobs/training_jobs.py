"""Creating model (training) jobs: one per dataset x network x learning rate x batch size.

The CLI's ``trainyard train`` and ``POST /api/models`` both describe what to train as a
``TrainRequest``; every job spec is validated before any job is created, so a sweep with one bad
value creates nothing. Each job asks for its devices (``needs``): the next N free GPUs, an exact
set, or a CPU slot (where ``processes`` data-parallel processes run); the batch size is per GPU
or process, so the global batch is that times the process count.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainyard.artifact.checkpoint import CheckpointError, checkpoint_for_epoch
from trainyard.core.errors import InvalidInput, validation_message
from trainyard.core.files import read_json, write_json_atomic
from trainyard.core.paths import resolve_inside
from trainyard.core.status import Status
from trainyard.jobs.context import Context
from trainyard.jobs.limits import check_processes
from trainyard.jobs.manager import JobConflict, JobError, JobNotFound
from trainyard.jobs.store import Job
from trainyard.training.spec import MAX_NAME, ModelSpec


class TrainRequest(BaseModel):
    """What a user asks to train. Lists make a sweep: one job per combination."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=MAX_NAME)
    datasets: list[str] = Field(min_length=1)
    networks: list[str] = Field(default_factory=list)
    network_source: str | None = None
    base_lrs: list[float] = Field(default_factory=list)
    batch_sizes: list[int] = Field(default_factory=list)
    gpus: int | None = Field(None, ge=1)
    gpu_ids: list[int] | None = None
    pretrained: str | None = None  # JOB[:EPOCH], or a weights file inside the data roots
    settings: dict = Field(default_factory=dict)  # any other ModelSpec field: epochs, solver, lr, ...


class InvalidSpec(InvalidInput, JobError):
    """A training setting out of range (HTTP 422), refused before any job is queued."""


def create_model_jobs(ctx: Context, request: TrainRequest, *, foreground: bool = False) -> list[Job]:
    """Validate every combination, then create the jobs (nothing is created if one is invalid)."""
    if not request.networks and not request.network_source:
        raise JobError("choose a standard network or give a custom network's source")
    needs = _needs(ctx, request)
    pretrained = resolve_pretrained(ctx, request.pretrained) if request.pretrained else None
    planned = []
    for dataset_id, network, lr, batch in _combinations(request):
        dataset = _dataset(ctx, dataset_id)
        fields = dict(request.settings)
        fields["lr"] = {**fields.get("lr", {}), **({"base_lr": lr} if lr is not None else {})}
        fields.update(name=_job_name(request, dataset, network, lr, batch), dataset_id=dataset.id,
                      dataset_dir=str(ctx.manager.folder(dataset.id).dataset), pretrained=pretrained,
                      network=network, network_source=None if network else request.network_source,
                      batch_size=batch if batch is not None else fields.get("batch_size"))
        try:
            planned.append((ModelSpec.model_validate(fields), dataset))
        except ValidationError as exc:
            raise InvalidSpec(validation_message(exc)) from exc
    group = request.name if len(planned) > 1 else None
    return [ctx.manager.create("model", spec.name, spec.model_dump(mode="json"), needs=needs,
                               parent_id=dataset.id, group=group, foreground=foreground)
            for spec, dataset in planned]


def _combinations(request: TrainRequest):
    # None in a list means "the default" (the network's batch size, 0.01, a custom network file)
    networks: list[str | None] = [*request.networks] or [None]
    lrs: list[float | None] = [*request.base_lrs] or [None]
    batches: list[int | None] = [*request.batch_sizes] or [None]
    return itertools.product(request.datasets, networks, lrs, batches)


def _job_name(request: TrainRequest, dataset: Job, network, lr, batch) -> str:
    """The request's name, plus what tells the jobs of a sweep apart."""
    parts = []
    if len(request.datasets) > 1:
        parts.append(dataset.name)
    if len(request.networks) > 1:
        parts.append(network)
    if len(request.base_lrs) > 1:
        parts.append(f"lr={lr:g}")
    if len(request.batch_sizes) > 1:
        parts.append(f"bs={batch}")
    name = f"{request.name} [{', '.join(parts)}]" if parts else request.name
    return name if len(name) <= MAX_NAME else name[:MAX_NAME - 1] + "…"


def _dataset(ctx: Context, dataset_id: str) -> Job:
    job = ctx.store.get_job(dataset_id)
    if job is None or job.kind != "dataset":
        raise JobNotFound(f"no dataset with id {dataset_id!r}")
    if job.status in (Status.FAILED, Status.ABORTED):
        raise JobConflict(f"dataset {dataset_id} {job.status}; build it again first")
    return job


def _needs(ctx: Context, request: TrainRequest) -> dict:
    processes = request.settings.get("processes") or 1
    if not isinstance(processes, int) or isinstance(processes, bool):
        raise JobError(f"settings.processes should be a whole number, not {processes!r}")
    return devices_needed(ctx, request.gpus, request.gpu_ids, processes)


def devices_needed(ctx: Context, gpus: int | None, gpu_ids: list[int] | None, processes: int = 1) -> dict:
    """A model job's ``needs``: exact GPUs, N next free GPUs, or the CPU (also for processes > 1)."""
    check_processes(processes)
    if processes > 1:
        if gpus or gpu_ids:
            raise JobError("processes > 1 runs data-parallel processes on the CPU; on GPUs one "
                           "process runs per GPU: ask for GPUs alone")
        return {"pool": "cpu"}
    if gpu_ids:
        return {"pool": "gpu", "ids": sorted(set(gpu_ids))}
    if gpus:
        return {"pool": "gpu", "count": gpus}
    return {"pool": "gpu", "count": 1} if ctx.pools.gpus else {"pool": "cpu"}


def resume_model_job(ctx: Context, job_id: str, *, gpus: int | None = None, gpu_ids: list[int] | None = None,
                     processes: int | None = None, foreground: bool = False) -> Job:
    """Queue an ended model job again, optionally on other devices (more or fewer GPUs or CPU
    processes); it continues from its last checkpoint (training/resume.py says how exactly)."""
    job = ctx.manager.get(job_id)
    if gpus or gpu_ids or processes:
        if job.kind != "model" or not job.status.is_final:
            raise JobConflict(f"job {job_id} is a {job.status} {job.kind} job; only an ended model job can be resumed")
        needs = devices_needed(ctx, gpus, gpu_ids, processes or 1)
        ctx.pools.check(needs)
        folder = ctx.manager.folder(job_id)
        spec = read_json(folder.spec)
        write_json_atomic(folder.spec, {**spec, "processes": processes or 1})
        ctx.store.update_job(job_id, needs=needs)
    return ctx.manager.resume(job_id, foreground=foreground)


def resolve_pretrained(ctx: Context, value: str) -> str:
    """``JOB[:EPOCH]`` -> that job's checkpoint path; otherwise a weights file in the data roots."""
    job_id, _, epoch = value.partition(":")
    job = ctx.store.get_job(job_id)
    if job is not None:
        if job.kind != "model":
            raise JobError(f"{job_id} is a {job.kind} job; pretrained weights come from a model job")
        try:
            return str(checkpoint_for_epoch(ctx.manager.folder(job_id).path, float(epoch) if epoch else None))
        except (CheckpointError, ValueError) as exc:
            raise JobError(f"model {job_id}: {exc}") from exc
    path = Path(resolve_inside(value, ctx.settings.allowed_roots))
    if not path.is_file():
        raise JobError(f"pretrained weights {value} is not a file")
    return str(path)
