"""Creating model (training) jobs: one per dataset x network x learning rate x batch size.

The CLI's ``trainyard train`` and ``POST /api/models`` both describe what to train as a
``TrainRequest``; every job spec is validated before any job is created, so a sweep with one bad
value creates nothing. Each job asks for its devices (``needs``): the next N free GPUs, an exact
set, or a CPU slot (where ``processes`` data-parallel processes run); the batch size is per GPU
or process, so the global batch is that times the process count. In cluster mode
(TRAINYARD_CLUSTER=ray) a job needs no local lease: it asks the cluster for N GPU or CPU workers
(``{"pool": "cluster", ...}``, mirrored in the spec's ``cluster``), and Ray places them.
devices.py works the ``needs`` out; resume_model.py queues an ended job again on other devices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from trainyard.core.errors import InvalidInput, validated
from trainyard.core.limits import MAX_NAME
from trainyard.core.ownership import Visibility
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK
from trainyard.datasets.info import DatasetInfo, read_dataset_info
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.devices import cluster_placement, devices_needed
from trainyard.jobs.kinds.errors import JobConflict, JobError
from trainyard.jobs.kinds.lookup import job_of_kind
from trainyard.jobs.kinds.pretrained import Pretrained, resolve_pretrained
from trainyard.jobs.kinds.registry import DATASET
from trainyard.jobs.kinds.sweeps import (
    DEFAULT_MIN_EPOCHS,
    MAX_TRIALS,
    check_ranges,
    check_size,
    combinations,
    mark_early_stop,
    sweep_size,
)
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.store import Job
from trainyard.training.train_settings import BatchSize, TrainSettings

if TYPE_CHECKING:
    from trainyard.networks.recommend import DatasetFacts


class TrainRequest(BaseModel):
    """What a user asks to train. Lists make a sweep: one job per combination."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=MAX_NAME)
    datasets: list[str] = Field(min_length=1)
    networks: list[str] = Field(default_factory=list)
    network_source: str | None = None
    base_lrs: list[float] = Field(default_factory=list)
    batch_sizes: list[BatchSize] = Field(default_factory=list)  # a number, or "auto" (the largest that fits)
    gpus: int | None = Field(None, ge=1)
    gpu_ids: list[int] | None = None
    # JOB[:EPOCH], "imagenet" (each network's published weights), a weights store entry, or a
    # weights file inside the data roots
    pretrained: str | None = None
    max_restarts: int = Field(0, ge=0)  # cluster mode: resumes after a lost worker or node
    # A search (jobs/kinds/sweeps.py): ranges to draw ``trials`` combinations from, and early stopping.
    lr_range: tuple[float, float] | None = None  # log-uniform
    batch_size_range: tuple[int, int] | None = None
    trials: int | None = Field(None, ge=1, le=MAX_TRIALS)
    early_stop: bool = False  # stop runs among the worst at a validation point (jobs/runs/early_stop.py)
    early_stop_min_epochs: float = DEFAULT_MIN_EPOCHS  # epochs every run trains before it is judged
    settings: TrainSettings = Field(default_factory=TrainSettings)  # how each job trains: epochs, solver, lr, ...
    # Who else sees the jobs: only their owner (and admins), or the whole team (jobs/store/actor.py).
    visibility: Visibility = "private"


class InvalidSpec(InvalidInput, JobError):
    """A training setting out of range (HTTP 422), refused before any job is queued."""


def create_model_jobs(ctx: Context, request: TrainRequest, *, foreground: bool = False,
                      check_only: bool = False, say: Callable[[str], None] | None = None) -> list[Job]:
    """Validate every combination, then create the jobs (nothing is created if one is invalid).

    ``check_only``: validate and check the networks, create nothing, return [] (the form's first
    step, so it can say "checking network…" and then "creating N jobs…", the check then cached).
    Without a network, each dataset trains its task's recommended one; ``say`` is told which."""
    # Imported here, on the first job created, not by every process that imports this module
    # (the server's start-up). None of them imports torch: the CLI waiting for the job stays light.
    from trainyard.training.spec import ModelSpec

    check_ranges(request.lr_range, request.batch_size_range, request.trials)
    check_size(sweep_size(request.datasets, request.networks, request.base_lrs, request.batch_sizes,
                          request.trials), ctx.settings.max_sweep_jobs)
    pretrained = resolve_pretrained(ctx, request.pretrained)
    request = _network_of_pretrained(request, pretrained)
    recommend, say_once = not (request.networks or request.network_source), _once(say)
    needs = _needs(ctx, request)
    planned = []
    for dataset_id, network, lr, batch in _combinations(request):
        dataset = _dataset(ctx, dataset_id)
        task = dataset_task(ctx, dataset)
        if recommend:
            network = _recommended(ctx, dataset, task, say_once)
        refuse_task_mismatch(dataset, task, network)
        fields = request.settings.model_dump(exclude_unset=True)  # as sent: the spec records what was set
        fields["lr"] = {**fields.get("lr", {}), **({"base_lr": lr} if lr is not None else {})}
        fields = with_recipe(network, fields)
        fields.update(name=_job_name(request, dataset, network, lr, batch), dataset_id=dataset.id,
                      dataset_dir=str(ctx.manager.folder(dataset.id).dataset), pretrained=None,
                      task=task,
                      network=network, network_source=None if network else request.network_source,
                      batch_size=batch if batch is not None else request.settings.batch_size,
                      cluster=cluster_placement(needs),
                      max_restarts=request.max_restarts or request.settings.max_restarts)
        if pretrained is not None:
            fields.update(pretrained.spec_fields(network))
        planned.append((validated(ModelSpec, fields, error=InvalidSpec), dataset))
    if not foreground:  # a job run at once reports the same problem at once; queued ones would not
        from trainyard.jobs.kinds.precheck import check_all  # builds networks in child processes

        check_all(ctx, [spec for spec, _ in planned])
    if request.early_stop and len(planned) < 2:
        raise InvalidInput("early stopping compares the runs of a sweep; this makes one job (give several "
                           "learning rates or batch sizes, or a range with trials)")
    if check_only:
        return []
    group = request.name if len(planned) > 1 else None
    with accounts.creating_with(request.visibility):
        jobs = [ctx.manager.create("model", spec.name, spec.model_dump(mode="json"), needs=needs,
                                parent_id=dataset.id, group=group, foreground=foreground)
                for spec, dataset in planned]
    return mark_early_stop(ctx.store, jobs, request.early_stop_min_epochs) if request.early_stop else jobs


def with_recipe(network: str | None, fields: dict) -> dict:
    """The settings ``fields`` sent, over the recipe of ``network`` (networks/table.py: how a
    YOLO trains where the user says nothing). A panel sent in part (``lr``, ``augment``) keeps
    the recipe's other fields: ``--lr 0.01`` on a YOLO still warms up and decays by cosine."""
    from trainyard.networks.table import get_network, is_standard

    if network is None or not is_standard(network):
        return fields
    merged = get_network(network).recipe_settings()
    for key, value in fields.items():
        below = merged.get(key)
        merged[key] = {**below, **value} if isinstance(below, dict) and isinstance(value, dict) else value
    return merged


def _combinations(request: TrainRequest):
    # None in a list means "the default" (the network's batch size, 0.01, a custom network file)
    return combinations(request.datasets, request.networks, request.base_lrs, request.batch_sizes,
                        lr_range=request.lr_range, batch_size_range=request.batch_size_range,
                        trials=request.trials, seed=request.settings.seed)


def _job_name(request: TrainRequest, dataset: Job, network, lr, batch) -> str:
    """The request's name, plus what tells the jobs of a sweep apart."""
    parts = []
    if len(request.datasets) > 1:
        parts.append(dataset.name)
    if len(request.networks) > 1:
        parts.append(network)
    if len(request.base_lrs) > 1 or request.lr_range:
        parts.append(f"lr={lr:g}")
    if len(request.batch_sizes) > 1 or request.batch_size_range:
        parts.append(f"bs={batch}")
    name = f"{request.name} [{', '.join(parts)}]" if parts else request.name
    return name if len(name) <= MAX_NAME else name[:MAX_NAME - 1] + "…"


def dataset_task(ctx: Context, dataset: Job) -> str:
    """What the dataset is for (its spec's task: classification unless it says detection)."""
    spec = DATASET.find_spec(ctx.manager.folder(dataset.id))
    return getattr(spec, "task", None) or DEFAULT_TASK


def refuse_task_mismatch(dataset: Job, task: str, network: str | None) -> None:
    """One line about the dataset (422) when ``network`` is for the other task: what the dataset
    is and what to pick instead, before the spec's own, network-level refusal."""
    from trainyard.networks import list_networks
    from trainyard.networks.table import family, is_standard
    from trainyard.networks.table import network_task as task_of

    if network is None or not (is_standard(network) or family(network) is not None):
        return  # a custom file, or an unknown name the spec's check names
    network_task = task_of(network)
    wanted = task_traits(task).network_task  # a multi-label dataset trains classifiers
    if network_task == wanted:
        return
    fitting = [info.name for info in list_networks() if info.task == wanted]
    instead = f"or {task_traits(network_task).dataset_hint}"
    raise InvalidSpec(f"dataset {dataset.name!r} ({dataset.id}) is a {task} dataset and {network} is a "
                      f"{network_task} network: pick a {task} network ({', '.join(fitting[:5])}"
                      f"{', ...' if len(fitting) > 5 else ''}), {instead}")


def _recommended(ctx: Context, dataset: Job, task: str, say: Callable[[str], None]) -> str:
    """The network ``task`` recommends for ``dataset`` (networks/recommend.py), said to ``say``."""
    from trainyard.networks.recommend import recommendation_note, recommended_network

    facts = dataset_facts(ctx, dataset)
    say(f"{dataset.name} ({dataset.id}): {recommendation_note(task, facts)}")
    return recommended_network(task, facts)


def _once(say: Callable[[str], None] | None) -> Callable[[str], None]:
    """``say``, each line once (a sweep asks for a dataset's network once a combination)."""
    said: set[str] = set()

    def once(line: str) -> None:
        if say is not None and line not in said:
            said.add(line)
            say(line)
    return once


def dataset_facts(ctx: Context, dataset: Job) -> DatasetFacts:
    """What a recommendation reads of a dataset: its info.json, else its build's summary so far."""
    from trainyard.networks.recommend import DatasetFacts

    info = read_dataset_info(ctx.manager.folder(dataset.id).dataset) or DatasetInfo.of(dataset.summary)
    return DatasetFacts(images=info.images.get("train"), width=info.width, height=info.height)


def _dataset(ctx: Context, dataset_id: str) -> Job:
    job = job_of_kind(ctx.store, dataset_id, "dataset")
    if job.status.is_unsuccessful:
        raise JobConflict(f"dataset {dataset_id} {job.status}; build it again first")
    return job


def _needs(ctx: Context, request: TrainRequest) -> dict:
    return devices_needed(ctx, request.gpus, request.gpu_ids, request.settings.processes)


def _network_of_pretrained(request: TrainRequest, pretrained: Pretrained | None) -> TrainRequest:
    """Without a network, fine-tuning a previous model or store weights trains their network
    (DIGITS's "previous networks" and "pretrained networks" tabs)."""
    if request.networks or request.network_source or pretrained is None or not pretrained.brings_network:
        return request
    return request.model_copy(update={"networks": [pretrained.network] if pretrained.network else [],
                                      "network_source": pretrained.network_source})
