"""What ``--pretrained`` means, worked out once where a model job is asked for.

The value is one of: ``imagenet`` (each network's published default weights), a weights store
entry (``resnet18.imagenet``, ``timm:resnet10t.imagenet``, a user's own), a model job
(``JOB[:EPOCH]``: that epoch's checkpoint, or its latest) or a weights file inside the data
roots. `resolve_pretrained` turns it into one `Pretrained` at the edge, in that order of
precedence (a job id shadows a store name, a store name a file): the CLI's ``trainyard train``
and ``POST /api/models`` both reach it through `create_model_jobs`. The rest of job creation
reads the object: which network the weights bring (training without ``--network``) and the
spec fields each job of a sweep gets. A store entry is matched to each network of a sweep there
(`spec_fields`), since ``imagenet`` names another entry for every network.

The weights store is imported when a value is resolved, not with this module: the server's
start-up does not pay for it, and nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from trainyard.artifact.checkpoint import CheckpointError, checkpoint_for_epoch
from trainyard.core.errors import NotFound
from trainyard.core.paths import PathNotAllowed, resolve_inside
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.errors import JobError
from trainyard.jobs.kinds.registry import MODEL
from trainyard.jobs.store import actor as accounts

if TYPE_CHECKING:
    from trainyard.weights.store import WeightsStore

@dataclass(frozen=True)
class Pretrained:
    """A resolved ``--pretrained`` value: where the weights are and what network they bring."""

    value: str  # as the user gave it
    source: Literal["job", "store", "file"]
    path: str | None = None  # a job's checkpoint or the file; a store entry's path is per network
    # The network the weights were made for, when known: a job's (name, or a custom source), a
    # named store entry's. None for imagenet and files: the request must name the network.
    network: str | None = None
    network_source: str | None = None
    store: WeightsStore | None = field(default=None, compare=False, repr=False)

    @property
    def brings_network(self) -> bool:
        """Whether training without a network can take this one's (DIGITS's "previous
        networks" and "pretrained networks" tabs)."""
        return bool(self.network or self.network_source)  # a job's or a named entry's; not imagenet's

    def spec_fields(self, network: str | None) -> dict:
        """The model spec's fields for fine-tuning ``network`` from these weights. Store weights
        for another network, or whose file is not in the store, are refused here: before the
        job is queued, not in it."""
        if self.source != "store":
            return {"pretrained": self.path}
        from trainyard.weights import finetune

        assert self.store is not None  # a store reference always carries its store
        found = finetune.resolve_for_network(self.store, self.value, network)
        norm = {"mean": found["mean"], "std": found["std"]} if found["mean"] and found["std"] else None
        return {"pretrained": found["path"], "pretrained_entry": found["entry"], "input_norm": norm}


def resolve_pretrained(ctx: Context, value: str | None) -> Pretrained | None:
    """``value`` as one `Pretrained` (None for none); JobError (or PathNotAllowed) says what is wrong."""
    if not value:
        return None
    job_id, _, epoch = value.partition(":")
    job = ctx.store.get_job(job_id)
    if job is not None and accounts.may_see(job):  # another user's private model: as if none
        if job.kind != "model":
            raise JobError(f"{job_id} is a {job.kind} job; pretrained weights come from a model job")
        folder = ctx.manager.folder(job_id)
        try:
            path = checkpoint_for_epoch(folder.path, float(epoch) if epoch else None)
        except (CheckpointError, ValueError) as exc:
            raise JobError(f"model {job_id}: {exc}") from exc
        spec = MODEL.spec_of(folder)
        return Pretrained(value, "job", str(path), spec.network, spec.network_source)
    from trainyard.jobs.accounts.weights_access import ActorAccess
    from trainyard.weights import finetune
    from trainyard.weights.catalogue import IMAGENET_TAG
    from trainyard.weights.store import WeightsStore

    store = WeightsStore.from_settings(ctx.settings, ActorAccess(ctx.store))  # another's private entry: as if none
    if finetune.is_store_name(store, value):
        network = None if value == IMAGENET_TAG else store.resolve(value)["network"]
        return Pretrained(value, "store", network=network, store=store)
    try:
        path = Path(resolve_inside(value, ctx.settings.allowed_roots))
    except PathNotAllowed:
        if "/" in value or value.startswith("~"):
            raise
        # A bare name is what a job or a store entry is called: another user's private one reads
        # as one that does not exist (404), never as a file outside the data roots.
        raise NotFound(f"--pretrained {value}: no model job, weights entry or file of that name") from None
    if not path.is_file():
        raise JobError(f"pretrained weights {value} is not a file")
    return Pretrained(value, "file", str(path))
