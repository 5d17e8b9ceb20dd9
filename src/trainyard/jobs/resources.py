"""Resource pools and leases: dataset-build slots, CPU training slots and GPUs.

A job's ``needs`` names a pool and how much of it: ``{"pool": "dataset"}``, ``{"pool": "cpu"}``,
``{"pool": "gpu", "count": 2}`` (the next free two) or ``{"pool": "gpu", "ids": [0, 3]}`` (exactly
those). Leases live in the database, so a foreground CLI job and the server never hand out the
same resource twice: the lease table's primary key is the resource name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from trainyard.jobs.store import Store


@dataclass(frozen=True)
class GPU:
    index: int
    name: str
    memory_total: int  # bytes
    uuid: str = ""

    @property
    def label(self) -> str:
        return f"GPU {self.index}: {self.name} ({self.memory_total / 2**30:.0f} GiB)"


def _visible_indices(count: int) -> list[int]:
    """Physical NVML indices visible to this process, honouring CUDA_VISIBLE_DEVICES."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(range(count))
    out = []
    for part in visible.split(","):
        part = part.strip()
        if part.isdigit() and int(part) < count:
            out.append(int(part))
        elif part:
            break  # CUDA stops at the first entry it cannot parse (UUIDs are not handled here)
    return out


def gpu_inventory() -> list[GPU]:
    """The GPUs this process may use, numbered as CUDA numbers them (0..n-1); [] without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        gpus = []
        for cuda_index, nvml_index in enumerate(_visible_indices(pynvml.nvmlDeviceGetCount())):
            handle = pynvml.nvmlDeviceGetHandleByIndex(nvml_index)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else name
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total
            gpus.append(GPU(cuda_index, name, int(memory)))
        return gpus
    finally:
        pynvml.nvmlShutdown()


class NotSatisfiable(ValueError):
    """A request that no amount of waiting can satisfy (more GPUs than exist, unknown ids)."""


class Pools:
    """How many of each resource exist, and how to lease a job's needs from them."""

    def __init__(self, dataset_slots: int, cpu_slots: int, gpus: list[GPU]):
        self.sizes = {"dataset": dataset_slots, "cpu": cpu_slots}
        self.gpus = gpus

    def check(self, needs: dict) -> None:
        """Raise NotSatisfiable when the request could never be met on this machine."""
        pool = needs.get("pool", "cpu")
        if pool != "gpu":
            return
        ids, count = needs.get("ids"), needs.get("count", 1)
        available = {g.index for g in self.gpus}
        if not self.gpus:
            raise NotSatisfiable("this machine has no GPU; train on the CPU instead")
        if ids and not set(ids) <= available:
            raise NotSatisfiable(f"GPU ids {sorted(set(ids) - available)} do not exist here")
        if not ids and count > len(self.gpus):
            raise NotSatisfiable(f"{count} GPUs asked for, this machine has {len(self.gpus)}")

    def acquire(self, store: Store, job_id: str, needs: dict) -> list[str] | None:
        """Lease what the job needs; return the resource names, or None if they are busy."""
        pool = needs.get("pool", "cpu")
        taken = store.leases()
        if pool == "gpu":
            if needs.get("ids"):
                wanted = [f"gpu:{i}" for i in needs["ids"]]
            else:
                free = [f"gpu:{g.index}" for g in self.gpus if f"gpu:{g.index}" not in taken]
                wanted = free[: needs.get("count", 1)]
                if len(wanted) < needs.get("count", 1):
                    return None
        else:
            free = [f"{pool}:{i}" for i in range(self.sizes[pool]) if f"{pool}:{i}" not in taken]
            if not free:
                return None
            wanted = free[:1]
        if any(r in taken for r in wanted):
            return None
        return wanted if store.try_lease(job_id, wanted) else None

    @staticmethod
    def gpu_ids(resources: list[str]) -> list[int]:
        return [int(r.split(":")[1]) for r in resources if r.startswith("gpu:")]
