"""The validated, versioned input of a model (training) job: its spec.json.

The CLI and the API build a `ModelSpec` from what the user asked for and the job writes it to
spec.json; the training process reads it back with `load_spec`. Unknown fields are refused, so a
typo does not silently fall back to a default. Paths (``dataset_dir``, ``pretrained``) are
resolved and checked against the data roots by the layer that creates the job, not here.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainyard.core.errors import InvalidInput
from trainyard.core.files import read_json
from trainyard.networks import get_network
from trainyard.training.augment import AugmentSettings
from trainyard.training.lr_policies import LRSettings
from trainyard.training.solvers import get_solver

SPEC_VERSION = 1
MAX_EPOCHS = 100_000
MAX_SEED = 2**32 - 1  # numpy's classic seed range; torch.manual_seed refuses 1e23
MAX_NAME = 200  # the database's name column
MAX_PROCESSES = 1024  # per node; the job creator also caps it by the machine or cluster


class ModelSpec(BaseModel):
    """What to train: a network, on a dataset, with a solver and an LR policy, for so long."""

    # inf or NaN in any number would pass gt/ge checks and fail only in the training process.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    version: int = SPEC_VERSION
    kind: Literal["model"] = "model"
    id: str | None = None
    name: str = Field("model", min_length=1, max_length=MAX_NAME)

    dataset_id: str = Field(min_length=1)
    dataset_dir: str = Field(min_length=1)  # the dataset folder (info.json, train/, val/, ...)

    # Exactly one: a standard network by name, or a custom network file's Python source.
    network: str | None = None
    network_source: str | None = None

    epochs: float = Field(30, gt=0, le=MAX_EPOCHS)
    batch_size: int | None = Field(None, ge=1)  # None: the network's default
    accumulation: int = Field(1, ge=1)  # batches per optimizer step
    solver: str = "sgd"
    lr: LRSettings = Field(default_factory=LRSettings)
    momentum: float = Field(0.9, ge=0, lt=1)
    weight_decay: float = Field(1e-4, ge=0)
    snapshot_interval: float = Field(1, ge=0)  # epochs; 0 = only at the end
    val_interval: float = Field(1, ge=0)  # epochs; 0 = only at the end
    seed: int | None = Field(None, ge=0, le=MAX_SEED)  # None: a random seed, recorded in the log and checkpoints

    crop: int | None = Field(None, ge=1)
    mean: Literal["image", "pixel", "none"] = "image"
    augment: AugmentSettings = Field(default_factory=AugmentSettings)

    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    compile: bool = False
    channels_last: bool = True  # GPU only

    pretrained: str | None = None  # a checkpoint, or a .safetensors / .pt / .pth weights file
    freeze_backbone: bool = False
    # Data parallelism (DDP, training/distributed.py). batch_size is per process (per GPU), so
    # the global batch is batch_size x processes x nnodes. On GPUs one process runs per leased
    # GPU; ``processes`` sets how many run on the CPU (gloo) of each node.
    processes: int = Field(1, ge=1, le=MAX_PROCESSES)
    scale_lr: bool = False  # multiply base_lr by the number of processes (the linear scaling rule)
    nnodes: int = Field(1, ge=1, le=MAX_PROCESSES)  # machines taking part; each runs this job with its node_rank
    node_rank: int = Field(0, ge=0)
    master: str | None = None  # HOST:PORT of node 0's rendezvous; needed when nnodes > 1

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != SPEC_VERSION:
            raise ValueError(f"spec version {value} is not supported (this trainyard reads version "
                             f"{SPEC_VERSION})")
        return value

    @field_validator("network")
    @classmethod
    def _known_network(cls, value: str | None) -> str | None:
        return None if value is None else get_network(value).name

    @field_validator("solver")
    @classmethod
    def _known_solver(cls, value: str) -> str:
        return get_solver(value).name

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if (self.network is None) == (self.network_source is None):
            raise ValueError("give exactly one of network (a standard network's name) or "
                             "network_source (a custom network file)")
        if self.network_source is not None and not self.network_source.strip():
            raise ValueError("network_source is empty")
        if self.freeze_backbone and not self.pretrained:
            raise ValueError("freeze_backbone needs pretrained weights to keep (set pretrained)")
        if self.solver == "nesterov" and self.momentum <= 0:
            raise ValueError("the nesterov solver needs a momentum above 0")
        if self.node_rank >= self.nnodes:
            raise ValueError(f"node_rank {self.node_rank} is not below nnodes {self.nnodes}")
        if self.nnodes > 1 and not self.master:
            raise ValueError("a job on several nodes needs master (HOST:PORT of node 0)")
        return self

    @field_validator("master")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host, _, port = value.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"master {value!r} should be HOST:PORT, e.g. 10.0.0.1:29500")
        return f"{host}:{int(port)}"

    def default_batch_size(self) -> int:
        """The batch size to use: the spec's, else the network's default (32 for custom ones)."""
        if self.batch_size is not None:
            return self.batch_size
        return get_network(self.network).batch_size if self.network else 32


class SpecError(InvalidInput):
    """A spec.json that cannot be used; the message lists every problem."""


def load_spec(path: str | os.PathLike) -> ModelSpec:
    """Read and validate a model job's spec.json."""
    try:
        return ModelSpec.model_validate(read_json(path))
    except ValidationError as e:
        raise SpecError(f"invalid model spec {path}: {format_errors(e)}") from None


def format_errors(error: ValidationError) -> str:
    """Pydantic's errors as one line a person can read: 'epochs: must be > 0; ...'."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
