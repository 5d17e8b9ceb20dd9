"""Resuming an ended model job, optionally on other devices (more or fewer GPUs or CPU
processes, or the cluster): its spec, confinement record and ``needs`` are updated first."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trainyard.core.files import write_json_atomic
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.devices import cluster_placement, devices_needed
from trainyard.jobs.kinds.errors import JobConflict
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job

if TYPE_CHECKING:
    from trainyard.training.spec import ModelSpec


def resume_model_job(ctx: Context, job_id: str, *, gpus: int | None = None, gpu_ids: list[int] | None = None,
                     processes: int | None = None, foreground: bool = False) -> Job:
    """Queue an ended model job again, optionally on other devices (more or fewer GPUs or CPU
    processes); it continues from its last checkpoint (training/resume.py says how exactly).

    In cluster mode a job that ran on one machine continues on the cluster, on as many workers
    as it had processes or GPUs: where jobs run is the deployment's choice (jobs/scheduling/deployment.py)."""
    job = ctx.manager.get(job_id)
    if not (gpus or gpu_ids or processes) and ctx.settings.cluster == "ray" and _ran_on_one_machine(job):
        gpus, processes = _same_devices(job, MODEL.spec_of(ctx.manager.folder(job_id)))
    if gpus or gpu_ids or processes:
        if job.kind != "model" or not job.status.is_final:
            raise JobConflict(f"job {job_id} is a {job.status} {job.kind} job; only an ended model job can be resumed")
        needs = devices_needed(ctx, gpus, gpu_ids, processes or 1)
        ctx.pools.check(needs)
        folder = ctx.manager.folder(job_id)
        stored = folder.read_spec()
        placement = cluster_placement(needs)
        # The stored document is rewritten as it was, but for these: fields it has that this version
        # does not know stay; its own reader is the training process, which checks it strictly.
        write_json_atomic(folder.spec, {**stored, "processes": processes or 1, "cluster": placement,
                                        "max_restarts": MODEL.read(stored).max_restarts if placement else 0})
        # Only the placement changes in the record: whether it runs user code and what it reads
        # stay as the server recorded them, whatever the job wrote into its spec.json since.
        recorded = confinement_record.recall(ctx.store, job, ctx.settings.jobs_dir)
        confinement_record.record(ctx.store, job_id, replace(recorded, processes=processes or 1,
                                                             on_cluster=placement is not None))
        ctx.store.update_job(job_id, needs=needs)
    return ctx.manager.resume(job_id, foreground=foreground)


def _ran_on_one_machine(job: Job) -> bool:
    return job.kind == "model" and job.needs.get("pool") in ("cpu", "gpu")


def _same_devices(job: Job, spec: ModelSpec) -> tuple[int | None, int]:
    """(GPUs, processes) of the devices ``job`` had on its machine, for as many cluster workers."""
    if job.needs.get("pool") == "gpu":
        return len(job.needs.get("ids") or []) or job.needs.get("count") or 1, 1
    return None, spec.processes
