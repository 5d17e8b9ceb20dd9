"""On a real GPU (`pytest -m gpu`; skipped without one): NVML through trainyard's inventory and
monitor names the devices torch sees, and a standard and a custom model job run on a leased GPU
through the scheduler and the runner (handed the GPU by UUID)."""

from __future__ import annotations

import pytest

from tests.conftest import tick_until
from tests.training.model_helpers import VIEW_NET, make_dataset, model_spec
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools, gpu_inventory
from trainyard.jobs.views.hardware import GpuMonitor

pytestmark = pytest.mark.requires_cuda(1)


def test_nvml_inventory_and_monitor_name_the_devices_torch_sees():
    import torch

    inventory = gpu_inventory()
    assert len(inventory) == torch.cuda.device_count()
    for gpu in inventory:
        assert gpu.uuid.removeprefix("GPU-") == str(torch.cuda.get_device_properties(gpu.index).uuid)
    readings = GpuMonitor().sample()
    assert len(readings) == len(inventory) and all(r["memory_total"] for r in readings)


@pytest.mark.parametrize("network", ["standard", "custom"])
def test_a_model_job_runs_on_its_leased_gpu(settings, tmp_path, network):
    ctx = open_context(settings, pools=Pools(2, 1, gpu_inventory()))
    dataset = make_dataset(tmp_path / "ds", train=64, val=16, size=16)
    fields = {"network": None, "network_source": VIEW_NET} if network == "custom" else {}
    spec = model_spec(dataset, epochs=1, **fields)
    job = ctx.manager.create("model", network, spec.model_dump(mode="json"), needs={"pool": "gpu", "count": 1})
    done = tick_until(ctx, job.id, {"done", "failed"}, timeout=300)
    assert done.status == "done", done.error
    assert "on cuda" in ctx.manager.folder(job.id).log.read_text()
