"""A model job's devices: its ``needs`` (exact GPUs, the next N free GPUs, or the CPU; in cluster
mode N GPU or CPU workers) and the spec's ``cluster`` placement that mirrors them."""

from __future__ import annotations

from trainyard.jobs.context import Context
from trainyard.jobs.kinds.errors import JobError
from trainyard.jobs.scheduling.limits import check_processes


def devices_needed(ctx: Context, gpus: int | None, gpu_ids: list[int] | None, processes: int = 1) -> dict:
    """A model job's ``needs``: exact GPUs, N next free GPUs, or the CPU (also for processes > 1);
    in cluster mode N GPU or CPU workers on the cluster."""
    check_processes(processes, ctx.settings.cluster)
    if ctx.settings.cluster == "ray":
        return _cluster_needs(gpus, gpu_ids, processes)
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


def _cluster_needs(gpus: int | None, gpu_ids: list[int] | None, processes: int) -> dict:
    if gpu_ids:
        raise JobError("GPU ids name GPUs of one machine; on the cluster ask for a number of GPUs (--gpus N)")
    if processes > 1 and gpus:
        raise JobError("processes > 1 runs data-parallel processes on CPUs; on GPUs one process runs "
                       "per GPU: ask for GPUs alone")
    if gpus:
        return {"pool": "cluster", "device": "gpu", "count": gpus}
    if processes > 1:
        return {"pool": "cluster", "device": "cpu", "count": processes}
    from trainyard.jobs.scheduling.deployment import default_cluster_device

    return {"pool": "cluster", "device": default_cluster_device(), "count": 1}


def cluster_placement(needs: dict) -> dict | None:
    """The spec's ``cluster`` (what the launcher asks Ray for) from a job's ``needs``."""
    if needs.get("pool") != "cluster":
        return None
    return {"workers": needs["count"], "device": needs["device"]}
