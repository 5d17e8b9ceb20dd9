"""What a job is told of its leased GPUs: the physical device's UUID, never the server's relative
index; CUDA_DEVICE_ORDER=PCI_BUS_ID; MIG devices leased one by one, never their whole parent.

NVML is a stand-in (tests/jobs/test_hardware.py's FakeNVML) put where `import pynvml` finds it.
"""

from __future__ import annotations

import sys

import pytest

from tests.jobs.test_hardware import FakeNVML, GiB
from trainyard.core.vocabulary import LEASED_GPUS
from trainyard.jobs.scheduling.resources import GPU, Pools, fake_gpus, gpu_inventory


def four_gpus(mig: dict[int, int] | None = None) -> list[dict]:
    gpus = [{"name": f"Fake H100 #{n}", "util": 0, "total": 80 * GiB, "used": 0, "temp": 30,
             "uuid": f"GPU-{n}{n}{n}{n}-physical"} for n in range(4)]
    for n, slices in (mig or {}).items():
        gpus[n]["mig"] = [{"name": "Fake H100 MIG 1g.10gb", "util": 0, "total": 10 * GiB, "used": 0,
                           "temp": 0, "uuid": f"MIG-{n}-{k}"} for k in range(slices)]
    return gpus


@pytest.fixture
def nvml(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake = FakeNVML(four_gpus())
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def test_a_server_seeing_gpus_2_and_3_gives_gpu_0_s_job_physical_gpu_2(nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    inventory = gpu_inventory()
    assert [(g.index, g.uuid) for g in inventory] == [(0, "GPU-2222-physical"), (1, "GPU-3333-physical")]
    pools = Pools(1, 1, inventory)
    assert pools.environment([0]) == {"CUDA_VISIBLE_DEVICES": "GPU-2222-physical",
                                      "CUDA_DEVICE_ORDER": "PCI_BUS_ID", LEASED_GPUS: "0"}
    assert pools.environment([1, 0])["CUDA_VISIBLE_DEVICES"] == "GPU-3333-physical,GPU-2222-physical"
    assert pools.environment([]) == {"CUDA_VISIBLE_DEVICES": ""}  # a CPU job sees no GPU


def test_uuid_entries_in_the_server_s_own_variable_are_followed(nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-3333,GPU-1111-physical")
    assert [g.uuid for g in gpu_inventory()] == ["GPU-3333-physical", "GPU-1111-physical"]


def test_without_nvml_the_server_s_own_entry_at_the_lease_index_is_handed_on(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    torch_found = [GPU(0, "from torch", 80 * GiB), GPU(1, "from torch", 80 * GiB)]  # no UUIDs
    env = Pools(1, 1, torch_found).environment([1])
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_a_gpu_in_mig_mode_is_leased_as_its_mig_devices_not_whole(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(four_gpus(mig={1: 2})))
    inventory = gpu_inventory()
    assert [g.uuid for g in inventory] == ["GPU-0000-physical", "MIG-1-0", "MIG-1-1",
                                           "GPU-2222-physical", "GPU-3333-physical"]
    assert inventory[1].memory_total == 10 * GiB
    assert Pools(1, 1, inventory).environment([2])["CUDA_VISIBLE_DEVICES"] == "MIG-1-1"


def test_fake_gpus_never_reach_a_real_device_and_claim_no_lease():
    env = Pools(1, 1, fake_gpus(2)).environment([1])
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-fake-1"  # CUDA finds no device behind it: the CPU
    assert LEASED_GPUS not in env
