"""Imported models: an exported archive becomes a model job that is already done.

The job's folder holds what a trained job's would for classify and fine-tuning to work on it:
``checkpoints/epoch-N.pt`` rebuilt from the archive (weights from safetensors only), spec.json
(marked ``imported``), events.jsonl (the checkpoint, the archive's metrics, status done) and a
log line. No process runs: the folder is written first, then the job is recorded as done, so
nobody sees a half-written import. It has no dataset job (``parent`` is null); fine-tune from it
with ``--pretrained JOB``, like from any model job.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from trainyard.artifact.checkpoint import CheckpointHeader, save_checkpoint
from trainyard.core.events import EventWriter
from trainyard.core.files import write_json_atomic
from trainyard.core.ids import new_job_id
from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.core.status import Status
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.errors import JobError
from trainyard.jobs.scheduling.quotas import folder_bytes
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job


def import_model_archive(ctx: Context, archive: str | os.PathLike, name: str | None = None) -> Job:
    """Create a done model job from an exported archive; JobError says why one is refused."""
    # torch comes with the archive reader: on the first import, not at the server's start-up.
    from trainyard.inference.archive_import import ArchiveImportError, read_model_archive
    from trainyard.jobs.kinds.precheck import cache_for

    archive = Path(archive)
    ctx.manager.check_disk("model")  # a user at their disk quota imports nothing
    job_id = _free_job_id(ctx)
    folder = ctx.manager.folder(job_id)
    folder.create()
    try:
        # Unpack inside the job folder: same disk, and removed with the folder on failure.
        with tempfile.TemporaryDirectory(dir=folder.path, prefix=".import-") as work:
            # The network checked by this process's checker (the server's is warm; a command asks
            # a running server's first, cli/remote_check.py), its answers kept for the next import.
            checkpoint = read_model_archive(archive, work, ctx.settings.check_timeout_s, cache_for(ctx).check)
        name = name or _default_name(ctx, checkpoint, archive)
        spec = _write_folder(folder, job_id, name, checkpoint, archive.name)
    except ArchiveImportError as exc:
        shutil.rmtree(folder.path, ignore_errors=True)
        raise JobError(f"{archive.name}: {exc}") from None
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)
        raise
    now = time.time()
    job = Job(id=job_id, kind="model", name=name, status=Status.DONE, parent_id=None,
              needs={"pool": "cpu"}, progress=1.0, created_at=now, started_at=now, finished_at=now,
              status_detail=None, summary={"epoch": CheckpointHeader.of(checkpoint).epoch,
                                                        "imported": archive.name})
    # Someone else's custom network is user code: recorded so, whatever the folder says later.
    confinement_record.record(ctx.store, job_id, confinement_record.facts_of("model", spec))
    job.disk_bytes = folder_bytes(folder.path)  # done already: its size for the owner's disk quota
    return ctx.store.add_job(job)


def _free_job_id(ctx: Context) -> str:
    job_id = new_job_id()
    while ctx.store.get_job(job_id) is not None or ctx.manager.folder(job_id).path.exists():
        job_id = new_job_id()
    return job_id


def _default_name(ctx: Context, checkpoint: dict, archive: Path) -> str:
    """The exported job's name marked as imported, numbered when that name is taken: the same
    archive imported twice beside its original showed three models of one name on the home list."""
    origin = (CheckpointHeader.of(checkpoint).imported or {}).get("job") or {}
    base = origin.get("name") or archive.name.removesuffix(".gz").removesuffix(".tar").removesuffix(".zip")
    query = select(Job.name).where(Job.kind == "model", Job.name.startswith(f"{base} (imported", autoescape=True))
    with ctx.store.session() as s:
        taken = set(s.scalars(query))
    name, number = f"{base} (imported)", 1
    while name in taken:
        number += 1
        name = f"{base} (imported {number})"
    return name


def _write_folder(folder: JobFolder, job_id: str, name: str, checkpoint: dict, archive_name: str) -> dict:
    """Write the job's files; its spec."""
    from trainyard.inference.archive_import import describe_archive

    header = CheckpointHeader.of(checkpoint)
    epoch = header.epoch
    spec = {"version": 1, "kind": "model", "id": job_id, "name": name, "network": header.network,
            "network_source": header.network_source, "epochs": epoch, "task": header.task,
            "imported": {"archive": archive_name, **(header.imported or {})}}
    checkpoint = {**checkpoint, **header.model_copy(update={"spec": spec}).entries()}
    path = save_checkpoint(folder.checkpoints / checkpoint_name(epoch), checkpoint)
    write_json_atomic(folder.spec, spec)
    with EventWriter(folder.work) as events:
        events.log(f"{describe_archive(checkpoint)} ({archive_name})")
        for metric, points in header.metrics.items():
            for point_epoch, value in points:
                events.emit("metric", epoch=point_epoch, name=metric, value=value)
        events.emit("checkpoint", epoch=epoch, path=str(path))
        events.status(Status.DONE)
    return spec
