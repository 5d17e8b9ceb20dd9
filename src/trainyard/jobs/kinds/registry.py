"""The kinds of job (dataset, model, classify-many, evaluate): how each runs and describes itself.

Each kind names its subprocess entry point and how it describes itself as JSON: ``dataset``
builds a dataset, ``model`` trains a network, and a model's inference jobs ``classify-many``
(a list, folder or archive of images) and ``evaluate`` (a dataset split) share one entry point.

Adding a kind means registering a ``JobKind`` here; the store, runner, scheduler, API and CLI
handle every kind the same way. Each kind carries its spec class: code outside the job's own
process reads a job's spec.json through ``kind.spec_of(folder)``, typed, and tolerant of specs
that an older trainyard wrote (core/stored.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from trainyard.core import jobfiles
from trainyard.core.errors import InvalidInput
from trainyard.core.events import read_events
from trainyard.core.paths import CHECKPOINTS_DIR, JobFolder, checkpoint_name, is_inside
from trainyard.core.registry import Registry
from trainyard.core.stored import SpecModel, read_stored
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK
from trainyard.datasets.info import DatasetInfo, read_dataset_info
from trainyard.datasets.leftovers import RESUME_FILE, remove_build_leftovers
from trainyard.datasets.spec import DatasetSpec
from trainyard.inference import results
from trainyard.inference.spec import InferenceSpec, stored_spec
from trainyard.jobs.kinds.documents import Best, DatasetDetail, InferenceDetail, JobDetail, ModelDetail, SkippedImage
from trainyard.jobs.store.store import Job
from trainyard.networks.table import is_standard
from trainyard.training.spec import ModelSpec

S = TypeVar("S", bound=SpecModel)


def python_module_command(module: str, folder: JobFolder) -> list[str]:
    """A kind's subprocess: ``python -m <module> JOBDIR`` with this interpreter."""
    return [sys.executable, "-m", module, str(folder.path)]
# What a detection dataset's info adds to its description (datasets/detection/stats.py).
DETECTION_INFO = ("labels_format", "box_counts", "empty_images", "counts_meaning", "box_sizes", "images",
                  "label_notes", "warnings", "cooccurrence", "labels_per_image",  # multi-label's
                  "pixel_shares")  # a segmentation dataset's pixel shares


@dataclass(frozen=True)
class JobKind(Generic[S]):
    name: str
    module: str  # the subprocess entry point: python -m <module> JOBDIR
    # its document, made from the part every job has (jobs/kinds/documents.py)
    describe: Callable[[Job, JobFolder, JobDetail], JobDetail]
    # Called once the job has ended, however it ended: (job folder, the server's uploads folder).
    on_end: Callable[[JobFolder, Path], None] | None = field(default=None, kw_only=True)
    # The class of its spec.json; None for kinds that tests define with specs of their own.
    spec: type[S] | None = field(default=None, kw_only=True)

    def command(self, folder: JobFolder, gpu_ids: list[int]) -> list[str]:
        return python_module_command(self.module, folder)

    def spec_of(self, folder: JobFolder) -> S:
        """The job's stored spec, typed; FileNotFoundError when it has none, InvalidInput when it
        is not a spec of this kind."""
        stored = folder.read_spec()  # no link, no FIFO (core/jobfiles.py)
        return self.read(stored, what=f"{self.name} job {folder.path.name}'s spec")

    def read(self, stored: object, *, what: str = "") -> S:
        """A spec.json's content (``stored``) as this kind's spec class."""
        if self.spec is None:
            raise TypeError(f"job kind {self.name} declares no spec class")
        return read_stored(self.spec, stored, what=what or f"stored {self.name} spec")

    def find_spec(self, folder: JobFolder) -> S | None:
        """``spec_of``, or None where the job folder has no spec (yet, or any more) or none of this
        kind: for the watchers and listings, which must not stop at one job's broken folder."""
        try:
            stored = folder.read_spec()
        except (OSError, ValueError):  # missing, a link or FIFO planted by the job (jobfiles); not JSON
            return None
        return self.read_or_none(stored)

    def read_or_none(self, stored: object) -> S | None:
        """``read``, or None for an empty or missing spec or one that is not of this kind (a page
        describes such a job rather than failing)."""
        try:
            return self.read(stored) if stored else None
        except InvalidInput:
            return None


@dataclass(frozen=True)
class ModelKind(JobKind[ModelSpec]):
    """Training: one process, or one per leased GPU (per CPU process, per node) under
    torch.distributed.run when the job spans several."""

    def command(self, folder: JobFolder, gpu_ids: list[int]) -> list[str]:
        spec = self.find_spec(folder)
        if spec is None:  # the training process reports what is wrong with it, in the job's log
            return python_module_command(self.module, folder)
        if spec.cluster:  # Ray places the ranks (trainyard.cluster), in place of torchrun
            return python_module_command(CLUSTER_LAUNCHER, folder)
        processes = len(gpu_ids) if gpu_ids else spec.processes
        if processes == 1 and spec.nnodes == 1:
            return python_module_command(self.module, folder)
        return distributed_command(self.module, folder, processes, spec.nnodes, spec.node_rank, spec.master)


CLUSTER_LAUNCHER = "trainyard.cluster.launcher"


def distributed_command(module: str, folder: JobFolder, processes: int, nnodes: int = 1,
                        node_rank: int = 0, master: str | None = None) -> list[str]:
    """``python -m torch.distributed.run ... -m MODULE JOBDIR``: ``processes`` workers here.

    No restarts: a worker that fails makes the launcher stop the others and exit non-zero, so
    the job fails promptly instead of hanging. One node rendezvous on a free port of its own
    (--standalone), so jobs side by side never collide, on loopback (--local-addr): without it
    torchrun hands the ranks this machine's host name, and where that does not resolve no rank
    ever joins. Several nodes meet at node 0's HOST:PORT.
    """
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={processes}",
               "--max-restarts=0"]
    if nnodes == 1:
        command += ["--standalone", "--local-addr=127.0.0.1"]
    else:
        host, _, port = (master or "").rpartition(":")
        command += [f"--nnodes={nnodes}", f"--node-rank={node_rank}", f"--master-addr={host}",
                    f"--master-port={port}"]
    return command + ["-m", module, str(folder.path)]


KINDS: Registry[JobKind[Any]] = Registry("job kind")


def register_kind(kind: JobKind[Any]) -> JobKind[Any]:
    # Registering a kind again replaces it, as before the Registry: tests define kinds per test.
    return KINDS.register(kind.name, kind, replace=True)


def get_kind(name: str) -> JobKind[Any]:
    """The registered kind `name`; UnknownName (a NotFound) if there is none."""
    return KINDS.get(name)


def describe_dataset(job: Job, folder: JobFolder, common: JobDetail) -> DatasetDetail:
    info = read_dataset_info(folder.dataset) or DatasetInfo.of(job.summary)
    # detection's box statistics and notes (datasets/detection/stats.py), left out otherwise
    detection = {key: getattr(info, key) for key in DETECTION_INFO if key in info.model_fields_set}
    return DatasetDetail(
        **dict(common), classes=info.classes, counts=info.counts,
        skipped=[SkippedImage.model_validate(s) for s in info.skipped],
        not_images=info.not_images, ignored=info.ignored,
        image_size=[info.width, info.height] if info.has_geometry else None,
        channels=info.channels, resize=info.resize, encoding=info.encoding,
        depth=info.depth if info.depth != 8 else None, task=info.task or _spec_task(job, folder), **detection)


def _spec_task(job: Job, folder: JobFolder) -> str:
    """The task the spec asks for (before the build has written info.json)."""
    spec = DATASET.find_spec(folder) if job.kind == "dataset" else None
    return spec.task if spec is not None else DEFAULT_TASK


def model_metrics(folder: JobFolder) -> tuple[dict[str, list], list[int | float]]:
    """Metrics as {name: [[epoch, value], ...]} and the epochs that have a checkpoint.

    A resumed job may repeat epochs it had reported before it was killed; the later value wins,
    so every epoch appears once.
    """
    by_name: dict[str, dict[float, float]] = {}
    snapshots: dict[float, None] = {}
    for event in read_events(folder.events, {"metric", "checkpoint"}):
        if event["type"] == "metric":
            by_name.setdefault(event["name"], {})[event["epoch"]] = event["value"]
        else:
            snapshots[event["epoch"]] = None
    metrics = {name: sorted([e, v] for e, v in points.items()) for name, points in by_name.items()}
    files = set(jobfiles.regular_names(folder.work, CHECKPOINTS_DIR))  # no link counts (core/jobfiles.py)
    existing = [e for e in snapshots if checkpoint_name(e) in files]
    return metrics, sorted(existing)


def describe_model(job: Job, folder: JobFolder, common: JobDetail) -> ModelDetail:
    metrics, snapshots = model_metrics(folder)
    stored = spec_as_written(folder)
    spec = MODEL.read_or_none(stored)
    task = spec.task if spec else DEFAULT_TASK
    traits = task_traits(task)  # the best is the highest of its best metric (training/steps.py's TASKS agree)
    key = traits.best_metric
    for name in traits.metrics:
        metrics.setdefault(name, [])
    accuracy = metrics[key]
    best = max(accuracy, key=lambda p: p[1]) if accuracy else None
    network = spec.network or ("custom" if spec.network_source else None) if spec else None
    return ModelDetail(
        **dict(common), dataset=job.parent_id, task=task, network=network,
        epoch=job.summary.get("epoch", 0), epochs=spec.epochs if spec else None,
        batch_size=job.summary.get("batch_size", _fixed_batch(spec)),
        snapshots=snapshots, metrics=metrics,
        best=Best(epoch=best[0], **{key: best[1]}) if best else None,
        workers=(job.summary or {}).get("workers", []),  # cluster mode: where each rank runs
        diagnosis=(job.summary or {}).get("diagnosis") or [],  # the latest validation's findings
        spec=stored,  # the spec.json, typed (a broken one: None)
    )


def _fixed_batch(spec) -> int | None:
    """The batch a spec sets, or its standard network's default; None for ``auto`` (the job's
    summary says the one it chose) and where only building the network would tell (timm)."""
    if spec is None or isinstance(spec.batch_size, int):
        return spec.batch_size if spec is not None else None
    if spec.batch_size is None and spec.network_source:
        return spec.default_batch_size()
    if spec.batch_size is None and spec.network and is_standard(spec.network):
        return spec.default_batch_size()
    return None


def describe_inference(job: Job, folder: JobFolder, common: JobDetail) -> InferenceDetail:
    """A classify-many or evaluate job: its model, split and rows, and once done its figures."""
    rows = results.row_count(folder.path)
    try:
        spec = stored_spec(folder.read_spec())
    except OSError:  # none, or a link or FIFO in its place (core/jobfiles.py)
        return InferenceDetail(**dict(common), model=None, epoch=None, task=None, split=None, rows=rows)
    result = results.read_evaluation(folder.path) if spec.kind == "evaluate" else results.read_summary(folder.path)
    figures = {"accuracy": result.get("accuracy"), "top5_accuracy": result.get("top5_accuracy"),
               "images": result.get("images"), "boxes": result.get("boxes")} if result else {}
    return InferenceDetail(**dict(common), model=spec.model_id, epoch=spec.epoch, task=spec.kind,
                           split=spec.split, rows=rows, **figures)


def remove_uploaded_archives(folder: JobFolder, uploads_dir: Path) -> None:
    """A dataset copies what it needs from uploaded archives, so they go once the build ends."""
    spec = DATASET.find_spec(folder)
    for archive in (spec.train_archive, spec.val_archive) if spec else ():
        path = Path(archive) if archive else None
        if path is not None and is_inside(path, uploads_dir) and path.is_file():
            path.unlink()
            if not any(path.parent.iterdir()):
                path.parent.rmdir()  # the upload's own folder, made by save_upload


def spec_as_written(folder: JobFolder) -> dict:
    """The job's spec.json as it was written ({} when there is none or it cannot be read): what a
    model's page lists as its settings, whatever trainyard wrote it."""
    try:
        return folder.read_spec()
    except (OSError, ValueError):  # none yet, a link or FIFO in its place, not JSON: still described
        return {}


def end_dataset_job(folder: JobFolder, uploads_dir: Path) -> None:
    """After a build ends, however it ended: its uploads, and what a killed build left behind
    (but not what a resume needs: the checkpointed dataset.tmp and the uploads it reads)."""
    if not (folder.work / "dataset.tmp" / RESUME_FILE).is_file():
        remove_uploaded_archives(folder, uploads_dir)
    remove_build_leftovers(folder.work)


def end_inference_job(folder: JobFolder, uploads_dir: Path) -> None:
    """After an inference job ends, however it ended: the decode ring a killed classify-many left
    in shared memory (it decodes with the dataset build's pipeline, named after the job alike)."""
    remove_build_leftovers(folder.work)


DATASET = JobKind("dataset", "trainyard.datasets.run", describe_dataset, on_end=end_dataset_job, spec=DatasetSpec)
MODEL = ModelKind("model", "trainyard.training.run", describe_model, spec=ModelSpec)
# Inference jobs of a model: classify a list, folder or archive; evaluate a split.
CLASSIFY_MANY, EVALUATE = (JobKind(name, "trainyard.inference.run", describe_inference, on_end=end_inference_job,
                                   spec=InferenceSpec) for name in ("classify-many", "evaluate"))
for _kind in (DATASET, MODEL, CLASSIFY_MANY, EVALUATE):
    register_kind(_kind)
