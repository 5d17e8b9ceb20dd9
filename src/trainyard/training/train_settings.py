"""`TrainSettings`: how to train, as a user sets it: the body of ``POST /api/models``'s
``settings``, the CLI's ``train`` options, and (with what the server fills in) a model's spec.json.

`training/spec.py`'s `ModelSpec` is these settings plus the job's identity, dataset, network,
starting weights and placement. Defaults and descriptions come from
`training/setting_defaults.py`, which the CLI reads as well. Unknown settings are refused by
name, so a typo never falls back to a default silently.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from trainyard.core.limits import MAX_PROCESSES
from trainyard.core.stored import SpecModel, is_stored
from trainyard.core.vocabulary import MeanMode
from trainyard.training.augment_settings import AugmentSettings
from trainyard.training.lr_policies import LRSettings
from trainyard.training.setting_defaults import AUTO_BATCH, Precision, setting
from trainyard.training.solvers import get_solver

MAX_EPOCHS = 100_000
MAX_SEED = 2**32 - 1  # numpy's classic seed range; torch.manual_seed refuses 1e23


def _batch_size(value: object) -> object:
    """A number of images (1 or more), or "auto": one clear error rather than one per union member."""
    if value is None or value == AUTO_BATCH:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise PydanticCustomError("batch_size", "Input should be a whole number of images or 'auto'")
    if value < 1:
        raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to 1")
    return value


# A batch size as a user gives it: a number of images, or "auto" (AUTO_BATCH).
BatchSize = Annotated[int | Literal["auto"], BeforeValidator(_batch_size)]


class TrainSettings(SpecModel):
    """How to train: a solver and an LR policy for so long, the input, the precision, the processes."""

    # inf or NaN in any number would pass gt/ge checks and fail only in the training process.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    epochs: float = setting("epochs", gt=0, le=MAX_EPOCHS)
    batch_size: BatchSize | None = setting("batch_size")
    accumulation: int = setting("accumulation", ge=1)
    solver: str = setting("solver")
    lr: LRSettings = Field(default_factory=LRSettings, description="the learning-rate panel")
    momentum: float = setting("momentum", ge=0, lt=1)
    weight_decay: float = setting("weight_decay", ge=0)
    ema: float = setting("ema", ge=0, lt=1)
    snapshot_interval: float = setting("snapshot_interval", ge=0)
    val_interval: float = setting("val_interval", ge=0)
    seed: int | None = setting("seed", ge=0, le=MAX_SEED)

    crop: int | None = setting("crop", ge=1)
    mean: MeanMode = setting("mean")
    augment: AugmentSettings = Field(default_factory=AugmentSettings, description="the augmentation panel")

    precision: Precision = setting("precision")
    compile: bool = setting("compile")
    channels_last: bool = setting("channels_last")

    freeze_backbone: bool = setting("freeze_backbone")
    backbone_lr_mult: float = setting("backbone_lr_mult", gt=0, le=1)
    # Data parallelism (DDP, training/distributed.py). batch_size is per process (per GPU), so
    # the global batch is batch_size x processes x nnodes. On GPUs one process runs per leased
    # GPU; ``processes`` sets how many run on the CPU (gloo) of each node.
    processes: int = setting("processes", ge=1, le=MAX_PROCESSES)
    scale_lr: bool = setting("scale_lr")
    nnodes: int = setting("nnodes", ge=1, le=MAX_PROCESSES)
    node_rank: int = setting("node_rank", ge=0)
    master: str | None = setting("master")
    max_restarts: int = setting("max_restarts", ge=0)
    # elastic (training/elastic.py): after a lost node, on as few as this many workers
    min_workers: int | None = setting("min_workers", ge=1)

    @field_validator("solver")
    @classmethod
    def _known_solver(cls, value: str, info: ValidationInfo) -> str:
        return value if is_stored(info) else get_solver(value).name

    @field_validator("master")
    @classmethod
    def _host_port(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or is_stored(info):
            return value  # a stored spec's master was checked when it was written
        host, _, port = value.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"master {value!r} should be HOST:PORT, e.g. 10.0.0.1:29500")
        return f"{host}:{int(port)}"
