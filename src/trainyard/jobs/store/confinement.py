"""What the server recorded about a job's confinement when it created the job, in the store.

A job's folder is written by the job, and a custom network's job runs user code: it may rewrite
its own ``spec.json`` (say, ``dataset_dir: TRAINYARD_HOME`` and ``processes: 2`` to open TCP),
forge a checkpoint's header, plant a cache. So whether a job runs user code, what its sandbox
lets it read, whether it may reach TCP (its processes rendezvous) and whether its checkpoints
hold a custom network are facts written here, by the server, from the request it validated, and
read back from here only (jobs/runs/sandbox.py, inference for the server and the CLI).

An inference job (classify-many, evaluate) runs its model's network: it inherits the model's
verdict, and reads its checkpoint and its images. A dataset build runs trainyard's code only. A
job made before this table existed has no row: a model job is then taken as user code (confined:
never the other way round) reading only its dataset's folder as the store names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Boolean, Integer, String, select
from sqlalchemy.orm import Mapped, mapped_column

from trainyard.core.paths import JobFolder
from trainyard.core.stored import SpecView, read_stored
from trainyard.jobs.store.orm import Base

USER_CODE_KINDS = frozenset({"model", "classify-many", "evaluate"})  # top-N is a classify-many


class ConfinementRow(Base):
    """One job's confinement as the server decided it at creation (a new table: older stores
    gain it on opening, `create_all`)."""

    __tablename__ = "job_confinement"

    job_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_code: Mapped[bool] = mapped_column(Boolean, default=False)
    reads: Mapped[list] = mapped_column(JSON, default=list)  # files and folders it may read
    processes: Mapped[int] = mapped_column(Integer, default=1)
    nnodes: Mapped[int] = mapped_column(Integer, default=1)
    on_cluster: Mapped[bool] = mapped_column(Boolean, default=False)


@dataclass(frozen=True)
class Confinement:
    """The recorded facts, as the callers use them."""

    user_code: bool
    reads: list[str] = field(default_factory=list)
    processes: int = 1
    nnodes: int = 1
    on_cluster: bool = False

    def spans_processes(self, gpus: int) -> bool:
        """Whether its processes meet over TCP (a rendezvous): several GPUs, processes or nodes."""
        return gpus > 1 or self.processes > 1 or self.nnodes > 1 or self.on_cluster


class CreatedSpec(SpecView):
    """What the record takes of the spec the server validated for a new job (core/stored.py)."""

    network_source: str | None = None
    dataset_dir: str | None = None
    pretrained: str | None = None
    processes: int = 1
    nnodes: int = 1
    cluster: dict[str, Any] | None = None
    model_id: str | None = None  # an inference job's model
    checkpoint: str | None = None
    list_file: str | None = None
    folder: str | None = None
    archive: str | None = None
    image_root: str | None = None


def facts_of(kind: str, stored: dict, model: Confinement | None = None) -> Confinement:
    """The confinement of a new job of ``kind`` from the spec the server validated; an
    inference job's from its ``model``'s (user code when the model's record is missing)."""
    if kind not in USER_CODE_KINDS:  # a dataset build: trainyard's code only
        return Confinement(user_code=False)
    spec = read_stored(CreatedSpec, stored, what=f"new {kind} job's spec")
    if kind == "model":
        reads = [spec.dataset_dir, spec.pretrained]
        return Confinement(user_code=bool(spec.network_source), reads=[r for r in reads if r],
                           processes=spec.processes, nnodes=spec.nnodes, on_cluster=spec.cluster is not None)
    reads = [spec.checkpoint, spec.dataset_dir, spec.list_file, spec.folder, spec.archive, spec.image_root]
    return Confinement(user_code=model.user_code if model is not None else True, reads=[r for r in reads if r])


def record(store, job_id: str, facts: Confinement) -> None:
    """Write (or replace) the job's row."""
    row = ConfinementRow(job_id=job_id, user_code=facts.user_code, reads=list(facts.reads),
                         processes=facts.processes, nnodes=facts.nnodes, on_cluster=facts.on_cluster)
    with store.session.begin() as s:
        s.merge(row)


def recall(store, job, jobs_dir: Path) -> Confinement:
    """The job's recorded confinement; for a job made before the record existed, the safe guess
    (module docstring), from its store row only (``jobs_dir``: where the dataset jobs' folders are)."""
    with store.session() as s:
        row = s.scalars(select(ConfinementRow).where(ConfinementRow.job_id == job.id)).first()
    if row is not None:
        return Confinement(user_code=row.user_code, reads=list(row.reads or []), processes=row.processes,
                           nnodes=row.nnodes, on_cluster=row.on_cluster)
    if job.kind not in USER_CODE_KINDS:
        return Confinement(user_code=False)
    reads = [str(JobFolder(Path(jobs_dir) / job.parent_id).dataset)] if job.parent_id else []
    needs = job.needs or {}
    return Confinement(user_code=True, reads=reads, processes=int(needs.get("count") or 1),
                       on_cluster=needs.get("pool") == "cluster")


def forget(store, job_id: str) -> None:
    with store.session.begin() as s:
        row = s.get(ConfinementRow, job_id)
        if row is not None:
            s.delete(row)


def facts_for_new(store, jobs_dir: Path, kind: str, spec: dict) -> Confinement:
    """`facts_of` a job about to be created, its model's record looked up for an inference job."""
    model = None
    if kind != "model" and kind in USER_CODE_KINDS:
        model_id = read_stored(CreatedSpec, spec, what=f"new {kind} job's spec").model_id
        row = store.get_job(model_id) if model_id else None
        model = recall(store, row, jobs_dir) if row is not None else None
    return facts_of(kind, spec, model)


def recorded_user_code(ctx, model_id: str) -> bool:
    """Whether model job ``model_id``'s network is user code, as recorded (True when its job is
    gone from the store: never taken as standard on no evidence)."""
    job = ctx.store.get_job(model_id)
    return True if job is None else recall(ctx.store, job, ctx.settings.jobs_dir).user_code
