"""Live hardware figures: NVML readings through a fake NVML module, and process-tree CPU/memory."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from trainyard.jobs.views.hardware import GpuMonitor, Hardware, ProcessSampler


class NotSupported(Exception):
    """Stands in for pynvml.NVMLError_NotSupported."""


class FakeNVML:
    """The part of pynvml that hardware.py calls, over a list of made-up devices."""

    NVML_TEMPERATURE_GPU = 0
    NVML_DEVICE_MIG_ENABLE = 1

    def __init__(self, devices: list[dict], fail_init: bool = False):
        self.devices = devices
        self.fail_init = fail_init
        self.inits = 0

    def nvmlInit(self):
        self.inits += 1
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.devices[index]

    def nvmlDeviceGetUUID(self, handle):
        return handle.get("uuid") or f"GPU-{handle['name'].split()[-1].lower()}-{id(handle)}"

    def nvmlDeviceGetMigMode(self, handle):
        if "mig" not in handle:
            raise NotSupported("Not Supported")  # as a GPU that has no MIG answers
        return (1, 1) if handle["mig"] else (0, 0)

    def nvmlDeviceGetMaxMigDeviceCount(self, handle):
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle, index):
        if index >= len(handle["mig"]):
            raise NotSupported("Not Found")
        return handle["mig"][index]

    def nvmlDeviceGetName(self, handle):
        return handle["name"].encode()  # older pynvml returns bytes

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=handle["util"], memory=handle["util"] // 2)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=handle["total"], used=handle["used"], free=handle["total"] - handle["used"])

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return handle["temp"]

    def nvmlDeviceGetPowerUsage(self, handle):
        if handle.get("power_mw") is None:
            raise NotSupported("Not Supported")
        return handle["power_mw"]

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        if handle.get("limit_mw") is None:
            raise NotSupported("Not Supported")
        return handle["limit_mw"]


GiB = 2**30


def devices() -> list[dict]:
    return [
        {"name": "Fake H100", "util": 97, "total": 80 * GiB, "used": 61 * GiB, "temp": 71,
         "power_mw": 412_345, "limit_mw": 700_000},
        {"name": "Fake T4", "util": 3, "total": 16 * GiB, "used": 1 * GiB, "temp": 40,
         "power_mw": None, "limit_mw": None},
        {"name": "Fake A100", "util": 50, "total": 40 * GiB, "used": 20 * GiB, "temp": 55,
         "power_mw": 250_000, "limit_mw": 400_000},
    ]


@pytest.fixture(autouse=True)
def all_gpus_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_every_gpu_reports_utilization_memory_temperature_and_power_in_watts():
    readings = GpuMonitor(FakeNVML(devices())).sample()
    assert [g["index"] for g in readings] == [0, 1, 2]
    first = readings[0]
    assert first["name"] == "Fake H100"
    assert first["utilization"] == 97 and first["memory_utilization"] == 48
    assert (first["memory_used"], first["memory_total"]) == (61 * GiB, 80 * GiB)
    assert first["temperature"] == 71
    assert first["power"] == pytest.approx(412.3) and first["power_limit"] == 700.0


def test_a_reading_the_device_does_not_support_is_none_not_an_error():
    t4 = GpuMonitor(FakeNVML(devices())).sample([1])[0]
    assert t4["power"] is None and t4["power_limit"] is None
    assert t4["utilization"] == 3 and t4["temperature"] == 40


def test_a_job_gets_only_the_gpus_it_holds_in_its_order():
    readings = GpuMonitor(FakeNVML(devices())).sample([2, 0, 7])  # 7 does not exist: left out
    assert [(g["index"], g["name"]) for g in readings] == [(2, "Fake A100"), (0, "Fake H100")]


def test_cuda_indices_follow_cuda_visible_devices(monkeypatch):
    # The server sees physical GPUs 2 and 0 as CUDA 0 and 1, and leases name CUDA indices.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0")
    readings = GpuMonitor(FakeNVML(devices())).sample()
    assert [(g["index"], g["name"]) for g in readings] == [(0, "Fake A100"), (1, "Fake H100")]


def test_uuid_style_cuda_visible_devices_keeps_the_monitor_s_gpus(monkeypatch):
    gpus = devices()
    for n, gpu in enumerate(gpus):
        gpu["uuid"] = f"GPU-{n}aaaaaaa-0000-0000-0000-00000000000{n}"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-2aaa,GPU-0aaaaaaa-0000-0000-0000-000000000000")
    readings = GpuMonitor(FakeNVML(gpus)).sample()
    assert [(g["index"], g["name"]) for g in readings] == [(0, "Fake A100"), (1, "Fake H100")]


def test_a_gpu_in_mig_mode_is_read_as_its_mig_devices():
    gpus = devices()[:2]
    gpus[0]["mig"] = [{"name": "Fake H100 MIG 3g.40gb", "util": 0, "total": 40 * GiB, "used": GiB, "temp": 0,
                       "uuid": f"MIG-{k}"} for k in range(2)]
    gpus[1]["mig"] = []  # MIG-capable, MIG off: the whole GPU
    readings = GpuMonitor(FakeNVML(gpus)).sample()
    assert [(g["index"], g["name"]) for g in readings] == [
        (0, "Fake H100 MIG 3g.40gb"), (1, "Fake H100 MIG 3g.40gb"), (2, "Fake T4")]


def test_nvml_is_initialised_once_and_a_missing_driver_gives_no_gpus():
    nvml = FakeNVML(devices())
    monitor = GpuMonitor(nvml)
    for _ in range(5):
        monitor.sample()
    assert nvml.inits == 1

    broken = FakeNVML([], fail_init=True)
    monitor = GpuMonitor(broken, retry_s=3600)
    assert monitor.sample() == [] and monitor.sample([0]) == []
    assert broken.inits == 1  # not retried on every call of a page that polls


def test_cpu_and_memory_of_a_job_include_its_child_processes():
    busy = "import time\nend = time.time() + 5\nwhile time.time() < end: pass"
    # A parent that waits on a busy child: the figures must come from the child.
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.run([sys.executable, '-c', {busy!r}])"])
    try:
        sampler = ProcessSampler()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            first = sampler.sample(parent.pid)
            if first and first["processes"] == 2:
                break
            time.sleep(0.05)
        assert first["processes"] == 2
        time.sleep(0.6)
        figures = sampler.sample(parent.pid)
        assert figures["processes"] == 2
        # The parent only waits; the busy child keeps a core busy (less on a loaded machine).
        assert figures["percent"] > 5
        assert figures["rss"] > 5 * 2**20
    finally:
        parent.kill()
        parent.wait()


def test_a_process_that_is_gone_has_no_figures():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert ProcessSampler().sample(proc.pid) is None
    assert ProcessSampler().sample(None) is None


def job_row(status: str, resources: list[str], pid: int | None) -> SimpleNamespace:
    return SimpleNamespace(id="j1", status=status, status_detail=None, error=None, progress=0.5, eta=12.0,
                           summary={"resources": resources}, pid=pid)


def test_a_running_job_reports_its_gpus_and_processes():
    import os

    figures = Hardware(FakeNVML(devices())).job(job_row("running", ["gpu:1", "gpu:2"], os.getpid())).as_json()
    assert [g["name"] for g in figures["gpus"]] == ["Fake T4", "Fake A100"]
    assert figures["cpu"]["processes"] >= 1 and figures["cpu"]["rss"] > 0
    assert figures["system"]["cpu_count"] >= 1 and figures["status"] == "running"


def test_an_ended_job_reports_no_live_figures():
    figures = Hardware(FakeNVML(devices())).job(job_row("done", ["gpu:0"], 12345)).as_json()
    assert figures["gpus"] == [] and figures["cpu"] is None and figures["eta"] is None
    assert figures["status"] == "done"


def test_the_fake_speaks_the_real_pynvml_api():
    """Every NVML name hardware.py calls through the fake exists in the installed pynvml."""
    pynvml = pytest.importorskip("pynvml")
    import inspect
    import re

    import trainyard.jobs.scheduling.gpu_devices as gpu_devices
    import trainyard.jobs.scheduling.resources as resources
    import trainyard.jobs.views.hardware as hardware

    called = {name for module in (hardware, gpu_devices, resources)
              for name in re.findall(r"\b(?:py)?nvml\.(\w+)", inspect.getsource(module))}
    faked = {n for n in vars(FakeNVML) if n.startswith(("nvml", "NVML_"))}
    assert called and called <= faked
    assert [n for n in sorted(faked) if not hasattr(pynvml, n)] == []
