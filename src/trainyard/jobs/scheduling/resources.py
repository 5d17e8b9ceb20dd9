"""Resource pools and leases: dataset-build slots, CPU training slots, inference slots and GPUs.

A job's ``needs`` names a pool and how much of it: ``{"pool": "dataset"}``, ``{"pool": "cpu"}``,
``{"pool": "gpu", "count": 2}`` (the next free two) or ``{"pool": "gpu", "ids": [0, 3]}`` (exactly
those), or ``{"pool": "inference"}`` (classify-many, top-N, evaluate). Leases live in the
database, so a foreground CLI job and the server never hand out the same resource twice: the
lease table's primary key is the resource name.

Inference never queues behind training: on a machine without GPUs it has slots of its own
(TRAINYARD_INFERENCE_JOBS, beside the training slots); with GPUs it takes a free GPU, else
shares one with the training on it (``gpushare:N``, one inference job per GPU: a short job's
few hundred MB beside a training, rather than a wait for the training to end).
"""

from __future__ import annotations

import ctypes.util
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainyard.core.errors import InvalidInput
from trainyard.core.vocabulary import gpu_index, gpu_resource, gpu_share
from trainyard.jobs.scheduling.gpu_devices import lease_environment, text, visible_units
from trainyard.jobs.store.store import Store


@dataclass(frozen=True)
class GPU:
    index: int
    name: str
    memory_total: int  # bytes
    uuid: str = ""  # GPU-... or MIG-...; "" where torch, not NVML, found it
    fake: bool = False  # TRAINYARD_FAKE_GPUS: its jobs train on the CPU

    @property
    def resource(self) -> str:
        """Its name as a leased resource: ``gpu:0``."""
        return gpu_resource(self.index)

    @property
    def label(self) -> str:
        return f"GPU {self.index}: {self.name} ({self.memory_total / 2**30:.0f} GiB)"


def gpu_inventory(nvml: Any = None) -> list[GPU]:
    """The GPUs this process may lease, numbered 0..n-1 in its own view (jobs/scheduling/gpu_devices.py).

    From NVML (``nvml``: the pynvml module by default, or a stand-in), which needs no CUDA
    context, MIG devices in place of a GPU in MIG mode; where NVML is missing, from torch.cuda
    if torch is installed with CUDA; [] on a machine without GPUs.
    """
    try:
        if nvml is None:
            nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:
        return _torch_inventory()
    try:
        units = visible_units(nvml)
        if any(unit.handle is None for unit in units):
            raise RuntimeError(next(unit.error for unit in units if unit.handle is None))
        return [GPU(index, text(nvml.nvmlDeviceGetName(unit.handle)),
                    int(nvml.nvmlDeviceGetMemoryInfo(unit.handle).total), unit.uuid)
                for index, unit in enumerate(units)]
    except Exception:
        return _torch_inventory()
    finally:
        nvml.nvmlShutdown()


def _torch_inventory() -> list[GPU]:
    if not _cuda_driver_present():
        # No driver, no GPU: importing torch (seconds, hundreds of MB) only to learn that would
        # slow every CLI command and the server's start-up on machines without GPUs. Not even
        # where torch is in sys.modules: another thread may be halfway through importing it, and
        # the first Create would wait for that import (issue 31.3: 30 s at a server's start).
        return []
    try:
        import torch

        if not torch.cuda.is_available():
            return []
        return [GPU(i, p.name, int(p.total_memory)) for i in range(torch.cuda.device_count())
                for p in [torch.cuda.get_device_properties(i)]]
    except Exception:
        return []


def _cuda_driver_present() -> bool:
    """Whether an NVIDIA driver is installed: torch.cuda cannot find a GPU without its libcuda."""
    return os.path.exists("/proc/driver/nvidia") or ctypes.util.find_library("cuda") is not None


def fake_gpus(count: int) -> list[GPU]:
    """``count`` pretend GPUs, for tests and demos without GPUs (TRAINYARD_FAKE_GPUS).

    Jobs lease them like real ones; a job on N of them trains as N processes on the CPU (gloo),
    since CUDA finds no device behind their UUIDs (the runner's CUDA_VISIBLE_DEVICES).
    """
    return [GPU(i, "Fake GPU (testing)", 16 * 2**30, f"GPU-fake-{i}", fake=True) for i in range(count)]


class NotSatisfiable(InvalidInput):
    """A request that no amount of waiting can satisfy (more GPUs than exist, unknown ids)."""


class Pools:
    """How many of each resource exist, and how to lease a job's needs from them."""

    def __init__(self, dataset_slots: int, cpu_slots: int, gpus: list[GPU] | Callable[[], list[GPU]],
                 inference_slots: int = 1):
        """``gpus``: the list, or a function that finds it, called when first needed."""
        self.sizes = {"dataset": dataset_slots, "cpu": cpu_slots, "inference": inference_slots}
        self._gpus = gpus

    @property
    def gpus(self) -> list[GPU]:
        # Found on first use: a command that builds a dataset or lists jobs never asks, so
        # never waits for NVML (or ldconfig, on a machine without a driver).
        if callable(self._gpus):
            self._gpus = self._gpus()
        return self._gpus

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

    def acquire(self, store: Store, job_id: str, needs: dict,
                holder: tuple[int, float] | None = None) -> list[str] | None:
        """Lease what the job needs; return the resource names, or None if they are busy.

        ``holder``: (pid, start time) of the managing process, recorded with the lease."""
        pool = needs.get("pool", "cpu")
        if pool == "cluster":
            return []  # Ray owns the cluster's resources: the launcher waits for them there
        taken = store.leases()
        if pool == "inference" and self.gpus:
            wanted = self._inference_gpu(taken)
            if wanted is None:
                return None
        elif pool == "gpu":
            if needs.get("ids"):
                wanted = [gpu_resource(i) for i in needs["ids"]]
            else:
                free = [g.resource for g in self.gpus if g.resource not in taken]
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
        return wanted if store.try_lease(job_id, wanted, holder) else None

    def _inference_gpu(self, taken: dict[str, str]) -> list[str] | None:
        """A free GPU, else a share of the first GPU no other inference job shares."""
        for name in (gpu_resource, gpu_share):
            free = [name(gpu.index) for gpu in self.gpus if name(gpu.index) not in taken]
            if free:
                return free[:1]
        return None

    def environment(self, gpu_ids: list[int]) -> dict[str, str]:
        """What a job's process is told of the GPUs ``gpu_ids`` it leased (gpu_devices.py)."""
        if not gpu_ids:
            return lease_environment({}, [])
        fake = any(g.fake for g in self.gpus)
        return lease_environment({g.index: g.uuid for g in self.gpus}, gpu_ids, fake=fake)

    @staticmethod
    def gpu_ids(resources: list[str]) -> list[int]:
        """The GPU indices a job's leases give it (whole or shared)."""
        return [i for i in map(gpu_index, resources) if i is not None]
