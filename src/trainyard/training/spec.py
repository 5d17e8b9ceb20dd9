"""The validated, versioned input of a model (training) job: its spec.json.

The CLI and the API build a `ModelSpec` from what the user asked for and the job writes it to
spec.json; the training process reads it back with `load_spec`. Unknown fields are refused, so a
typo does not silently fall back to a default. Paths (``dataset_dir``, ``pretrained``) are
resolved and checked against the data roots by the layer that creates the job, not here.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from trainyard.core.errors import InvalidInput, validated
from trainyard.core.files import read_json
from trainyard.core.limits import MAX_NAME
from trainyard.core.stored import SpecModel, is_stored, read_stored
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK, Task
from trainyard.networks import get_network
from trainyard.training.train_settings import TrainSettings

SPEC_VERSION = 1


class ClusterPlacement(SpecModel):
    """Cluster mode (trainyard.cluster): ``workers`` ranks placed by Ray, one GPU or CPU each."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(1, ge=1)
    device: Literal["cpu", "gpu"] = "cpu"


class InputNorm(SpecModel):
    """The per-channel mean and std (0..1 units) that pretrained weights expect their input in."""

    model_config = ConfigDict(extra="forbid")

    mean: list[float] = Field(min_length=1, max_length=4)
    std: list[float] = Field(min_length=1, max_length=4)

    @model_validator(mode="after")
    def _same_channels(self, info: ValidationInfo) -> InputNorm:
        if not is_stored(info) and len(self.mean) != len(self.std) or min(self.std) <= 0:
            raise ValueError("input_norm needs one mean and one positive std per channel")
        return self


class ModelSource(SpecModel):
    """What the server fills in for each job of a request: its identity, the dataset, the
    network, the starting weights and where Ray places it (cluster mode)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    version: int = SPEC_VERSION
    kind: Literal["model"] = "model"
    id: str | None = None
    name: str = Field("model", min_length=1, max_length=MAX_NAME)

    # Required (``_check``); optional only in a stored spec: an imported model's has none, it was
    # trained elsewhere (jobs/kinds/imported.py).
    dataset_id: str | None = Field(None, min_length=1)
    dataset_dir: str | None = Field(None, min_length=1)  # the dataset folder (info.json, train/, val/, ...)

    # What the dataset is for (its own task, copied when the job is made): classification
    # (labels per image) or detection (boxes); the network must be made for the same.
    task: Task = DEFAULT_TASK

    # Exactly one: a standard network by name, or a custom network file's Python source.
    network: str | None = None
    network_source: str | None = None

    pretrained: str | None = None  # a checkpoint, or a .safetensors / .pt / .pth weights file
    # Store weights (trainyard.weights): the entry's name; its backbone must fit the network
    # exactly, the classifier is made anew, and inputs are normalised as the weights expect.
    pretrained_entry: str | None = None
    input_norm: InputNorm | None = None
    # Cluster mode: where Ray places the ranks (None: this machine); ``max_restarts`` (a
    # setting) says how often a job that lost a worker or node resumes before it fails.
    cluster: ClusterPlacement | None = None


class ModelSpec(TrainSettings, ModelSource):
    """What to train: a network, on a dataset, with a solver and an LR policy, for so long.

    Its fields are `ModelSource`'s, then `TrainSettings`'s (spec.json keeps that order)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int, info: ValidationInfo) -> int:
        if value != SPEC_VERSION and not is_stored(info):
            raise ValueError(f"spec version {value} is not supported (this trainyard reads version "
                             f"{SPEC_VERSION})")
        return value

    @field_validator("network")
    @classmethod
    def _known_network(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None or is_stored(info) else get_network(value).name

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ModelSpec:
        if is_stored(info):  # it was valid when it was written; later rules do not apply to it
            return self
        if not (self.dataset_id and self.dataset_dir):
            raise ValueError("a model trains on a dataset: give dataset_id and dataset_dir")
        if (self.network is None) == (self.network_source is None):
            raise ValueError("give exactly one of network (a standard network's name) or "
                             "network_source (a custom network file)")
        if self.network_source is not None and not self.network_source.strip():
            raise ValueError("network_source is empty")
        if self.freeze_backbone and not self.pretrained:
            raise ValueError("freeze_backbone needs pretrained weights to keep (set pretrained)")
        if self.backbone_lr_mult != 1 and not self.pretrained:
            raise ValueError("backbone_lr_mult needs pretrained weights (set pretrained)")
        if self.pretrained_entry and not (self.pretrained and self.network):
            raise ValueError("pretrained_entry needs pretrained (its file) and a standard or timm network")
        wanted = task_traits(self.task).network_task  # a multi-label dataset trains classifiers
        if self.network and get_network(self.network).task != wanted:
            raise ValueError(f"network {self.network} is a {get_network(self.network).task} network and "
                             f"this dataset is for {self.task}: choose a {wanted} network")
        if self.solver == "nesterov" and self.momentum <= 0:
            raise ValueError("the nesterov solver needs a momentum above 0")
        if self.node_rank >= self.nnodes:
            raise ValueError(f"node_rank {self.node_rank} is not below nnodes {self.nnodes}")
        if self.nnodes > 1 and not self.master:
            raise ValueError("a job on several nodes needs master (HOST:PORT of node 0)")
        if self.cluster is not None and self.nnodes > 1:
            raise ValueError("on a cluster, Ray places the processes: leave nnodes at 1")
        if self.max_restarts and self.cluster is None:
            raise ValueError("max_restarts applies to cluster jobs (TRAINYARD_CLUSTER=ray)")
        if self.min_workers is not None and (self.cluster is None or self.min_workers > self.cluster.workers):
            raise ValueError("min_workers (elastic) applies to cluster jobs, and at most their number of workers")
        return self

    def default_batch_size(self) -> int:
        """The batch size to use: the spec's, else the network's default (32 for custom ones);
        with ``auto``, the default is where the search for the largest that fits starts."""
        if isinstance(self.batch_size, int):
            return self.batch_size
        return get_network(self.network).batch_size if self.network else 32

    def input_side(self, height: int, width: int) -> int:
        """The side of the square the network sees on ``height`` x ``width`` images (the crop,
        else the short side); InvalidInput when the crop or the network cannot work on them."""
        if self.crop and self.crop > min(height, width):
            raise InvalidInput(f"crop {self.crop} is larger than the dataset's {width}x{height} images")
        size = self.crop or min(height, width)
        need = get_network(self.network).min_image_size if self.network else 1
        if size < need:
            raise InvalidInput(f"network {self.network} needs images of at least {need}x{need}; this dataset "
                               f"gives {size}x{size}: choose a larger dataset or another network")
        return size


class SpecError(InvalidInput):
    """A spec.json that cannot be used; the message lists every problem."""


def load_spec(path: str | os.PathLike) -> ModelSpec:
    """Read and validate a model job's spec.json, for training it."""
    return validated(ModelSpec, read_json(path), what=f"invalid model spec {path}", error=SpecError)


def stored_spec(data: object) -> ModelSpec:
    """A stored model spec (a spec.json's content) read back, however old (core/stored.py)."""
    return read_stored(ModelSpec, data, what="stored model spec")


def dataset_folder(spec: ModelSpec) -> str:
    """The folder of the dataset ``spec`` trains on (``load_spec`` made sure it has one)."""
    if not spec.dataset_dir:
        raise SpecError("this model has no dataset to train on")
    return spec.dataset_dir

