"""What /api/system and a job's live figures answer (jobs/views/system.py, jobs/views/hardware.py).

Built as these models there and served as they are (core/document.py). Live readings that vary
by machine (CPU and memory figures, a process tree's, a cluster's nodes and workers) are named
``dict[str, Any]`` fields, described where they are read.
"""

from __future__ import annotations

from typing import Any

from trainyard.core.document import Document, Number, where_given
from trainyard.core.status import Status


class Holder(Document):
    name: str
    kind: str


class SystemGPU(Document):
    """A GPU of the pool, its lease and (with NVML) its live readings (jobs/views/hardware.py)."""

    index: int
    name: str | None
    memory_total: Number | None
    label: str | None
    job: str | None  # the job holding it
    holder: Holder | None = None
    utilization: int | None = None  # percent
    memory_utilization: int | None = None
    memory_used: Number | None = None
    temperature: int | None = None
    power: Number | None = None  # watts
    power_limit: Number | None = None
    error: str | None = where_given()  # why NVML cannot read it


class Slot(Document):
    resource: str
    label: str
    job: str | None
    holder: Holder | None


class SystemReport(Document):
    version: str
    backend: str
    gpus: list[SystemGPU]
    cpu: dict[str, Any]
    memory: dict[str, Any]
    leases: dict[str, str]
    slots: list[Slot] = []
    versions: dict[str, str | None] = {}  # trainyard, python, torch, torchvision
    disk: dict[str, Any] = {}  # {path, free, total} of TRAINYARD_HOME
    sandbox: dict[str, Any]  # what confines user code here (sandbox/policy.py status)
    nodes: list[dict[str, Any]] | None = where_given()  # cluster mode: the cluster's nodes (cluster/nodes.py)


class JobHardware(Document):
    """GET /api/jobs/{id}/hardware: the job's status and its live figures."""

    id: str
    status: Status
    status_detail: str | None
    error: str | None
    progress: Number | None
    eta: Number | None
    resources: list[str]
    gpus: list[dict[str, Any]]
    cpu: dict[str, Any] | None
    system: dict[str, Any]
    workers: list[dict[str, Any]]
    time: Number
