"""The GPUs this process may lease as NVML lists them, and what a job's process is told of its lease.

Numbering. trainyard names GPUs by their place in the server's own view: NVML's devices (in PCI
bus order), filtered and ordered by the server's ``CUDA_VISIBLE_DEVICES``; a lease ``gpu:0`` is
the first of those. A job is never handed that relative index: its ``CUDA_VISIBLE_DEVICES`` is
the leased devices' UUIDs (``lease_environment``), so a server started with
``CUDA_VISIBLE_DEVICES=2,3`` runs "gpu:0" on physical GPU 2, and with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``
CUDA's order inside the job agrees with NVML's. Index entries in the server's own
``CUDA_VISIBLE_DEVICES`` are read as NVML (PCI) indices: CUDA reads them the same way only under
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (set it for the server too, or name the GPUs by UUID).

MIG. A GPU in MIG mode is not leased whole: each of its MIG devices is a GPU of its own, named by
its ``MIG-`` UUID (what CUDA accepts for one), with its own memory. CUDA lets one process use one
MIG device, so a job on several MIG devices sees only the first; lease them one per job. The
parent GPU of MIG devices is never listed (leasing it would hand out every slice at once).

NVML arrives as an argument (pynvml in production) so tests hand a fake one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainyard.core import environment
from trainyard.core.vocabulary import LEASED_GPUS


@dataclass(frozen=True)
class Unit:
    """One leasable device: a whole GPU or one MIG device of a GPU in MIG mode."""

    handle: Any  # None when NVML could not reach the device (then ``error`` says why)
    nvml_index: int  # the physical GPU (a MIG device's parent)
    uuid: str
    mig: bool = False
    error: str | None = None


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_units(nvml: Any) -> list[Unit]:
    """Every leasable device NVML lists, in its (PCI) order; MIG devices in place of their GPU."""
    units: list[Unit] = []
    for index in range(nvml.nvmlDeviceGetCount()):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = text(nvml.nvmlDeviceGetUUID(handle))
        except Exception as exc:  # NVMLError_GpuIsLost and the like: listed, with the reason
            units.append(Unit(None, index, "", error=str(exc) or type(exc).__name__))
            continue
        migs = _mig_devices(nvml, handle)
        if migs:
            units.extend(Unit(h, index, text(nvml.nvmlDeviceGetUUID(h)), mig=True) for h in migs)
        else:
            units.append(Unit(handle, index, uuid))
    return units


def _mig_devices(nvml: Any, handle: Any) -> list[Any]:
    """The MIG devices of a GPU in MIG mode; [] for any other GPU (or an NVML without MIG)."""
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except Exception:  # NVMLError_NotSupported: not a MIG-capable GPU
        return []
    if current != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
        return []
    found = []
    for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
        try:
            found.append(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot))
        except Exception:  # NVMLError_NotFound: an empty slot
            continue
    return found


def visible_units(nvml: Any) -> list[Unit]:
    """The devices this process's CUDA_VISIBLE_DEVICES shows, in its order (position = CUDA index).

    Entries are NVML indices of whole GPUs or (prefixes of) ``GPU-``/``MIG-`` UUIDs; like CUDA,
    the list ends at the first entry that names no device, or one named twice.
    """
    units = nvml_units(nvml)
    visible = environment.cuda_visible_devices()
    if visible is None:
        return units
    out: list[Unit] = []
    for part in (p.strip() for p in visible.split(",")):
        if part.isdigit():
            matches = [u for u in units if u.nvml_index == int(part) and not u.mig]
        else:
            matches = [u for u in units if part and u.uuid.startswith(part)]
        if len(matches) != 1 or matches[0] in out:
            break
        out.append(matches[0])
    return out


def lease_environment(uuids: dict[int, str], gpu_ids: list[int], fake: bool = False) -> dict[str, str]:
    """The variables a job's process gets for the GPUs ``gpu_ids`` it leased (none: the CPU).

    ``uuids``: this server's GPUs by their lease index, with the UUID each has ("" where it is
    not known: torch found it, not NVML); such a GPU is named by the server's own visible entry
    at that index, or its index where the server sees all. Fake GPUs are named by their fake
    UUIDs, which CUDA finds no device behind: their jobs train on the CPU, as they should.
    """
    if not gpu_ids:
        return {"CUDA_VISIBLE_DEVICES": ""}  # a CPU job cannot grab a GPU by accident
    visible = environment.cuda_visible_devices()
    own = [p.strip() for p in (visible or "").split(",")]
    names = []
    for index in gpu_ids:
        uuid = uuids.get(index, "")
        if not uuid and visible is not None:
            uuid = own[index] if index < len(own) else str(index)
        names.append(uuid or str(index))
    env = {"CUDA_VISIBLE_DEVICES": ",".join(names), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if not fake:
        env[LEASED_GPUS] = ",".join(str(i) for i in gpu_ids)
    return env
