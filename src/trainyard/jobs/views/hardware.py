"""Live hardware figures for the job page and /api/system: per-GPU NVML readings and the CPU and
memory use of a job's process tree (psutil); for a cluster job, each worker's figures from its
own node (trainyard.cluster.nodes). No torch here: the server reads these every second
or two, for every open job page.

`GpuMonitor` takes the NVML module as an argument (pynvml by default), so tests hand it a fake
and the code runs without GPUs. NVML is initialised once per process and kept open: nvmlInit
costs tens of milliseconds, a reading a fraction of one. A reading a device does not support
(power on some boards, temperature in some VMs) is None, never an error.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from trainyard.core.status import Status
from trainyard.core.vocabulary import gpu_index
from trainyard.jobs.scheduling.gpu_devices import Unit, visible_units
from trainyard.jobs.views.system_documents import JobHardware


def _load_pynvml():
    import pynvml

    return pynvml


class GpuMonitor:
    """Per-GPU utilization, memory, temperature and power, by CUDA index (as leases name GPUs)."""

    def __init__(self, nvml: Any = None, retry_s: float = 60.0):
        self._nvml = nvml
        self._ready = False
        self._failed_at: float | None = None
        self._retry_s = retry_s  # a driver that failed to load is retried now and then, not per call
        self._lock = threading.Lock()

    def _init(self):
        """The initialised NVML module, or None where there is no NVML (no driver, no GPU)."""
        with self._lock:
            if self._ready:
                return self._nvml
            if self._failed_at is not None and time.monotonic() - self._failed_at < self._retry_s:
                return None
            try:
                if self._nvml is None:
                    self._nvml = _load_pynvml()
                self._nvml.nvmlInit()
            except Exception:
                self._failed_at = time.monotonic()
                return None
            self._ready = True
            return self._nvml

    def sample(self, cuda_indices: list[int] | None = None) -> list[dict]:
        """Readings of the given GPUs (all visible ones when None); [] without NVML."""
        nvml = self._init()
        if nvml is None:
            return []
        try:
            units = visible_units(nvml)  # as the inventory numbers them: UUIDs and MIG included
        except Exception:
            return []
        wanted = range(len(units)) if cuda_indices is None else cuda_indices
        return [self._read(nvml, index, units[index]) for index in wanted if 0 <= index < len(units)]

    @staticmethod
    def _read(nvml, cuda_index: int, unit: Unit) -> dict:
        doc: dict[str, Any] = {"index": cuda_index, "name": None, "utilization": None,
                               "memory_utilization": None, "memory_used": None, "memory_total": None,
                               "temperature": None, "power": None, "power_limit": None}
        if unit.handle is None:
            return {**doc, "error": unit.error}
        handle = unit.handle
        # A MIG device has no utilization, temperature or power of its own: those are None.
        name = _try(lambda: nvml.nvmlDeviceGetName(handle))
        doc["name"] = name.decode() if isinstance(name, bytes) else name
        rates = _try(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        if rates is not None:
            doc["utilization"], doc["memory_utilization"] = int(rates.gpu), int(rates.memory)
        memory = _try(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        if memory is not None:
            doc["memory_used"], doc["memory_total"] = int(memory.used), int(memory.total)
        sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        doc["temperature"] = _try(lambda: int(nvml.nvmlDeviceGetTemperature(handle, sensor)))
        # NVML reports milliwatts; the page shows watts.
        doc["power"] = _try(lambda: round(nvml.nvmlDeviceGetPowerUsage(handle) / 1000, 1))
        doc["power_limit"] = _try(lambda: round(nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000, 1))
        return doc


def _try(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception:  # NVMLError_NotSupported and friends: the field is simply unknown
        return None


@dataclass
class ProcessSampler:
    """CPU percent and resident memory of a process and all its descendants.

    CPU percent is CPU time used between two calls over the wall time between them (100 = one
    core busy, as `top` counts); a process seen for the first time is averaged over its life, so
    the first call already gives a figure. Memory is the sum of RSS, which counts pages shared
    between a job's processes (forked data workers) more than once: an upper bound.
    """

    _seen: dict[tuple[int, float], tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self, pid: int | None) -> dict | None:
        """{"percent", "rss", "processes"} of ``pid``'s tree, or None if it does not run."""
        if not pid:
            return None
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        now = time.time()
        percent, rss, alive = 0.0, 0, 0
        with self._lock:
            for proc in procs:
                try:
                    with proc.oneshot():
                        times = proc.cpu_times()
                        cpu = times.user + times.system
                        memory = proc.memory_info().rss
                        key = (proc.pid, proc.create_time())
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                last_cpu, last_time = self._seen.get(key, (0.0, key[1]))
                percent += 100.0 * max(cpu - last_cpu, 0.0) / max(now - last_time, 1e-3)
                self._seen[key] = (cpu, now)
                rss += memory
                alive += 1
            self._forget_old(now)
        if not alive:
            return None
        return {"percent": round(percent, 1), "rss": rss, "processes": alive}

    def _forget_old(self, now: float, max_age_s: float = 300.0) -> None:
        """Drop processes not sampled for a while, so the table does not grow without end."""
        for key in [k for k, (_, t) in self._seen.items() if now - t > max_age_s]:
            del self._seen[key]


class CpuMeter:
    """The whole machine's CPU use, in percent of all its cores, over at least ``min_window_s``.

    ``psutil.cpu_percent(interval=None)`` answers 0.0 on its first call in a process (what
    `trainyard system` and the server's first /system showed, on a busy machine), and between
    two calls a few milliseconds apart (two pages polling) the noise of that window. Here a
    first or stale reading measures a short window itself, and a reading too soon after the
    last repeats it.
    """

    def __init__(self, min_window_s: float = 0.5, stale_s: float = 10.0, first_window_s: float = 0.25):
        self.min_window_s, self.stale_s, self.first_window_s = min_window_s, stale_s, first_window_s
        self._last: tuple[float, Any] | None = None  # (monotonic time, psutil.cpu_times())
        self._value: float | None = None
        self._lock = threading.Lock()

    def percent(self) -> float:
        with self._lock:
            now = time.monotonic()
            if self._last is None or now - self._last[0] > self.stale_s:
                self._last = (now, psutil.cpu_times())
                time.sleep(self.first_window_s)
                now = time.monotonic()
            elif self._value is not None and now - self._last[0] < self.min_window_s:
                return self._value
            times = psutil.cpu_times()
            self._value = round(busy_percent(self._last[1], times), 1)
            self._last = (now, times)
            return self._value


def busy_percent(before, after) -> float:
    """Percent of CPU time not idle between two ``psutil.cpu_times()`` (guest time is already
    counted in user time on Linux, as psutil itself reckons)."""
    def total(t) -> float:
        return sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)

    def idle(t) -> float:
        return t.idle + getattr(t, "iowait", 0.0)

    elapsed = total(after) - total(before)
    return 0.0 if elapsed <= 0 else max(0.0, min(100.0, 100.0 * (1 - (idle(after) - idle(before)) / elapsed)))


class Hardware:
    """What the server samples: the GPUs (NVML) and job process trees (psutil)."""

    def __init__(self, nvml: Any = None):
        self.gpus = GpuMonitor(nvml)
        self.processes = ProcessSampler()
        self.cpu = CpuMeter()

    def system(self) -> dict:
        memory = psutil.virtual_memory()
        return {"cpu_count": os.cpu_count(), "cpu_percent": self.cpu.percent(),
                "memory_total": memory.total, "memory_used": memory.total - memory.available}

    def job(self, job) -> JobHardware:
        """Live figures of a job row: its GPUs and processes while it runs, nothing after."""
        running = job.status == Status.RUNNING
        resources = (job.summary or {}).get("resources", []) if running else []
        gpu_ids = [i for i in (gpu_index(r, shares=False) for r in resources) if i is not None]
        workers = (job.summary or {}).get("workers") or []
        return JobHardware(
            id=job.id, status=job.status, status_detail=job.status_detail, error=job.error,
            progress=job.progress, eta=job.eta if running else None, resources=resources,
            gpus=self.gpus.sample(gpu_ids) if gpu_ids else [],
            cpu=self.processes.sample(job.pid) if running else None,
            system=self.system(),
            workers=self.workers(workers) if running and workers else [],
            time=time.time(),
        )

    @staticmethod
    def workers(workers: list[dict]) -> list[dict]:
        """A cluster job's workers, each with its CPU and GPU figures read on its own node."""
        from trainyard.cluster.connect import ClusterUnavailable
        from trainyard.cluster.nodes import worker_figures  # ray, lazily: cluster jobs only

        try:
            return worker_figures(workers)
        except ClusterUnavailable:
            return [{**w, "cpu": None, "gpus": []} for w in workers]
