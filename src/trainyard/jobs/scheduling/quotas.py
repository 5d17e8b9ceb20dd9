"""Per-user quotas beyond running jobs: GPUs and CPU slots in use at once, disk of datasets and models.

Each quota is the user's own (``trainyard users set-quota``) or else the server's default
(TRAINYARD_USER_MAX_GPUS, _CPU_SLOTS, _DISK_BYTES); 0 is no cap. GPUs and CPU slots are counted
from the leases the user's jobs hold, so a job over either waits in the queue, saying why, and
starts on a later tick once the user is under quota. Disk is the sum of the sizes of the user's
dataset and model job folders, each measured once when its job ends (``record_size``), never by
a walk per scheduling pass; a new dataset or model job past it is refused (``check_disk``).
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from trainyard.core.errors import Forbidden
from trainyard.core.formatting import byte_size
from trainyard.core.status import ACTIVE_STATUSES
from trainyard.jobs.scheduling.readiness import Blocked
from trainyard.jobs.store.account_tables import UserRow
from trainyard.jobs.store.job_tables import Lease
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings

STORED_KINDS = ("dataset", "model")  # the kinds whose folders count against a disk quota


class OverQuota(Forbidden):
    """A new job refused because its user is at their disk quota (HTTP 403, CLI exit 2)."""


@dataclass(frozen=True)
class Quotas:
    """A user's caps (0: none)."""

    gpus: int
    cpu_slots: int
    disk_bytes: int


@dataclass(frozen=True)
class Usage:
    gpus: int
    cpu_slots: int
    disk_bytes: int


def quotas_of(store: Store, user: str, settings: Settings) -> Quotas:
    with store.session() as s:
        row = s.get(UserRow, user)

    def own(field: str, default: int) -> int:
        value = getattr(row, field, None)
        return value if value is not None else default

    return Quotas(gpus=own("max_gpus", settings.user_max_gpus),
                  cpu_slots=own("max_cpu_slots", settings.user_max_cpu_slots),
                  disk_bytes=own("max_disk_bytes", settings.user_max_disk_bytes))


def leased(store: Store, user: str, pool: str) -> int:
    """How many resources of ``pool`` (``gpu``, ``cpu``) the user's jobs hold now."""
    query = (select(func.count()).select_from(Lease).join(Job, Job.id == Lease.job_id)
             .where(Job.owner == user, Lease.resource.like(f"{pool}:%")))
    with store.session() as s:
        return int(s.execute(query).scalar_one())


def disk_used(store: Store, user: str, jobs_dir: Path) -> int:
    """Bytes of the user's dataset and model folders, from the sizes recorded when each ended;
    an ended one without a size (made before sizes were recorded) is measured once now."""
    mine = (Job.owner == user, Job.kind.in_(STORED_KINDS))
    with store.session() as s:
        total = s.execute(select(func.coalesce(func.sum(Job.disk_bytes), 0)).where(*mine)).scalar_one()
        unmeasured = list(s.scalars(select(Job.id).where(*mine, Job.disk_bytes.is_(None),
                                                         Job.status.not_in(ACTIVE_STATUSES))))
    return int(total or 0) + sum(record_size(store, jobs_dir / job_id, job_id) for job_id in unmeasured)


def usage_of(store: Store, user: str, jobs_dir: Path) -> Usage:
    return Usage(gpus=leased(store, user, "gpu"), cpu_slots=leased(store, user, "cpu"),
                 disk_bytes=disk_used(store, user, jobs_dir))


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (links are not followed, nor counted)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:  # removed meanwhile
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def record_size(store: Store, folder: Path, job_id: str) -> int:
    """Measure the ended job's folder and keep the size in its row; the size."""
    size = folder_bytes(folder)
    store.update_job(job_id, disk_bytes=size)
    return size


def record_size_soon(store: Store, folder: Path, job_id: str) -> None:
    """`record_size` in a thread of its own: a big dataset's walk never holds up the scheduler's
    tick (one left unfinished, by a command that exits, is measured when a quota asks)."""
    def measure() -> None:
        try:
            record_size(store, folder, job_id)
        except Exception:  # the store closed or the job deleted meanwhile: measured when asked
            pass

    threading.Thread(target=measure, daemon=True, name=f"size of {job_id}").start()


def _need(job: Job) -> tuple[str, int] | None:
    """(quota, how many) a queued job takes when it starts: GPUs or a CPU slot; None: neither."""
    pool = job.needs.get("pool", "cpu")
    if pool == "gpu":
        return "gpus", len(job.needs.get("ids") or []) or int(job.needs.get("count") or 1)
    return ("cpu_slots", 1) if pool == "cpu" else None


WORDS = {"gpus": ("gpu", "GPU", "GPUs"), "cpu_slots": ("cpu", "CPU slot", "CPU slots")}


def over_resource_quota(store: Store, job: Job, settings: Settings) -> Blocked | None:
    """Why ``job`` waits for its owner's GPU or CPU-slot quota, or None when it may start."""
    need = _need(job)
    if not job.owner or need is None:
        return None
    quota, wanted = need
    cap = getattr(quotas_of(store, job.owner, settings), quota)
    if cap <= 0:
        return None
    pool, one, many = WORDS[quota]
    used = leased(store, job.owner, pool)
    if used + wanted <= cap:
        return None
    if wanted > cap:  # no waiting makes it fit: say so, and it waits until the quota is raised
        return Blocked(f"waiting: job asks for {wanted} {many}, user {job.owner}'s quota is {cap}")
    return Blocked(f"waiting: user {job.owner} is using {used} of {cap} {one if cap == 1 else many}")


def check_disk(store: Store, user: str | None, kind: str, settings: Settings) -> None:
    """OverQuota when ``user`` is at their disk quota and asks for a new ``kind`` job that stores data."""
    if not user or kind not in STORED_KINDS:
        return
    cap = quotas_of(store, user, settings).disk_bytes
    if cap <= 0:
        return
    used = disk_used(store, user, settings.jobs_dir)
    if used >= cap:
        raise OverQuota(f"user {user} is using {byte_size(used)} of a {byte_size(cap)} disk quota on datasets and "
                        f"models: delete some, or ask an admin to raise it (trainyard users set-quota)")

