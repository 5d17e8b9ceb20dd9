"""What /api/system and ``trainyard system`` report: the backend, this machine's GPUs with their
leases and live readings, CPU and memory, the job slots and which job holds each, the versions
that matter to a bug report, free disk under TRAINYARD_HOME, and in cluster mode the cluster's nodes."""

from __future__ import annotations

import platform
import shutil
from importlib import metadata

from trainyard import __version__
from trainyard.jobs.context import Context
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.views.hardware import Hardware
from trainyard.jobs.views.system_documents import Holder, Slot, SystemGPU, SystemReport
from trainyard.sandbox import policy as sandbox


def system_report(ctx: Context, hardware: Hardware) -> SystemReport:
    """The report; in cluster mode it raises ClusterUnavailable when no cluster answers."""
    nodes = None
    if ctx.settings.cluster == "ray":
        from trainyard.cluster.nodes import list_nodes  # ray, lazily: cluster mode only

        nodes = list_nodes()
    leases = _visible(ctx, ctx.store.leases())
    holders = _names(ctx, set(leases.values()))
    live = {g["index"]: g for g in hardware.gpus.sample([g.index for g in ctx.pools.gpus])}
    figures = hardware.system()
    return SystemReport(
        version=__version__,
        backend=ctx.settings.cluster,
        gpus=[  # the pool's facts over NVML's readings (jobs/views/hardware.py)
            SystemGPU(**{**live.get(g.index, {}), "index": g.index, "name": g.name, "memory_total": g.memory_total,
                         "label": g.label, "job": leases.get(g.resource),
                         "holder": holders.get(leases.get(g.resource, ""))})
            for g in ctx.pools.gpus
        ],
        slots=[Slot(resource=f"{pool}:{i}", label=f"{SLOT_LABELS.get(pool, pool)} {i + 1}",
                    job=leases.get(f"{pool}:{i}"), holder=holders.get(leases.get(f"{pool}:{i}", "")))
               for pool, size in ctx.pools.sizes.items() for i in range(size)],
        versions=versions(),
        disk=_disk(ctx.settings.home),
        cpu={"count": figures["cpu_count"], "percent": figures["cpu_percent"]},
        memory={"total": figures["memory_total"], "used": figures["memory_used"]},
        leases=leases,
        sandbox=sandbox.status(),  # what confines custom networks here (sandbox/policy.py)
        nodes=nodes,
    )


SLOT_LABELS = {"cpu": "CPU training slot", "dataset": "Dataset build slot", "inference": "Inference slot"}


def versions() -> dict[str, str | None]:
    """trainyard's, Python's and the installed torch and torchvision versions (from the installed
    packages' metadata: importing torch to ask would cost the server seconds)."""
    found: dict[str, str | None] = {"trainyard": __version__, "python": platform.python_version()}
    for package in ("torch", "torchvision"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


PRIVATE_HOLDER = "private"


def _disk(home) -> dict:
    usage = shutil.disk_usage(home)
    return {"path": str(home), "free": usage.free, "total": usage.total}


def _visible(ctx: Context, leases: dict[str, str]) -> dict[str, str]:
    """The leases, another user's private job named only as PRIVATE_HOLDER (the slot is busy,
    and nothing says by what: jobs/store/actor.py)."""
    jobs = {i: ctx.store.get_job(i) for i in set(leases.values())}
    shown = {i for i, job in jobs.items() if job is None or accounts.may_see(job)}
    return {r: (i if i in shown else PRIVATE_HOLDER) for r, i in leases.items()}


def _names(ctx: Context, ids: set[str]) -> dict[str, Holder]:
    """The jobs holding a device or slot, by id."""
    jobs = (ctx.store.get_job(i) for i in ids)
    return {j.id: Holder(name=j.name, kind=j.kind) for j in jobs if j is not None}
