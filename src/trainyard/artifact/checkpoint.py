"""Checkpoints that describe themselves, written atomically and read with weights_only=True.

A checkpoint is one ``torch.save``d dict holding only tensors, dicts, lists, strings, numbers,
booleans and None, so ``torch.load(..., weights_only=True)`` reads it without running code:

    format          "trainyard-checkpoint/1"
    model           the network's state_dict
    network         standard network name, or None for a custom network
    network_source  the custom network file's source, or None (standard nets rebuild by name)
    classes         class names in label order
    image_size      the int passed to build(num_classes, in_channels, image_size)
    preprocess      {width, height, channels, resize, mean_mode, crop, mean, scale, std}: how an
                    image becomes input (see normalize.py); mean is float32 (H, W, C) 0..255;
                    std (per channel, or None) divides after the mean, for weights that expect it
    optimizer, scheduler, scaler   their state_dicts (scaler None without fp16)
    rng             {seed, torch (CPU state), cuda (a state per device)}; with several processes
                    rank 0's, with cuda for its own device only (cuda_device), plus ``ranks``:
                    every rank's, in rank order
    epoch, iteration, batches      where training stood (fractional epoch, optimizer steps, batches)
    batches_per_epoch, world_size, global_batch (images per step over all processes),
    train_images, base_lr          what a resume checks and converts (training/resume.py)
    keeps_big_last_batch           whether an epoch kept a big incomplete last batch (absent:
                    an older checkpoint, whose epochs dropped every one; a resume keeps its rule)
    metrics         {name: [[epoch, value], ...]}, best {epoch, val_accuracy} or None
    trainable       parameter names left trainable (freeze_backbone), or None for all
    head            the classifier's tensor names when fine-tuning (their own LR group), or None
    task            "classification" or "detection" (absent: classification, older checkpoints)
    spec            the job's spec as a dict (training's; `JobOrigin` reads what others need of it)
    imported        an imported archive's checkpoint only: {archive, job: {...}} of its origin

The descriptive entries (network, network_source, classes, image_size, epoch, task, metrics,
best, spec, imported) are read and written as one typed `CheckpointHeader`.

Files are ``JOB/checkpoints/epoch-0003.pt`` (`checkpoint_name`).

torch is imported by the functions that read, write or build, not by this module: the server,
the CLI and job creation find checkpoints by name without paying torch's start-up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from trainyard.core import jobfiles
from trainyard.core.errors import InvalidInput, NotFound, validation_message
from trainyard.core.files import write_atomic
from trainyard.core.paths import (
    JobFolder,
    checkpoint_epoch,
    checkpoint_name,
)
from trainyard.core.stored import SpecView, read_stored
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK, Task

if TYPE_CHECKING:
    import torch
    from torch import nn

FORMAT = "trainyard-checkpoint/1"
MAX_EPOCH = 1e6  # far beyond any training; keeps checkpoint file names short


class CheckpointError(NotFound):
    """A file that is not a trainyard checkpoint, or an epoch without one."""


class CheckpointHeader(BaseModel):
    """What a checkpoint says about itself, typed: every entry but the tensors and the training
    state (model, preprocess, optimizer, scheduler, scaler, rng, ...: the module docstring).

    Read from a loaded checkpoint with `of` and written into one with `entries` (the training
    loop's checkpoint_state, an imported archive's): the one place both happen. An older
    checkpoint lacks the newer entries (task, spec, metrics): they read as their defaults."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    network: str | None = None  # a standard network's name; None: network_source is the network
    network_source: str | None = None
    classes: list[str]
    image_size: int
    epoch: float
    task: Task = DEFAULT_TASK
    metrics: dict[str, list[Any]] = {}  # {name: [[epoch, value], ...]}
    best: dict[str, Any] | None = None  # {epoch, val_accuracy} (a detector's: val_map50)
    spec: dict[str, Any] | None = None  # the job's spec (training's: `JobOrigin` reads what others need)
    imported: dict[str, Any] | None = None  # an archive's checkpoint: {"archive", "job": {...}}

    @classmethod
    def of(cls, checkpoint: Mapping[str, Any]) -> CheckpointHeader:
        """The header of a loaded checkpoint; CheckpointError when it lacks what every one has."""
        try:
            return cls.model_validate(checkpoint)
        except ValidationError as exc:
            raise CheckpointError(f"not a usable checkpoint: {validation_message(exc)}") from None

    def entries(self) -> dict[str, Any]:
        """The header as checkpoint entries (what `of` reads back); ``imported`` only where it is one."""
        entries = self.model_dump()
        if self.imported is None:
            del entries["imported"]
        return entries

    @property
    def network_name(self) -> str:
        """The network as a person reads it: its name, or "custom"."""
        return self.network or "custom"


class JobOrigin(SpecView):
    """The job a checkpoint was trained in, as its embedded ``spec`` says. The spec is training's
    (which inference may not import), so only these fields are read; an older checkpoint, or
    one imported from an archive, may say less (None)."""

    id: str | None = None
    name: str | None = None
    dataset_id: str | None = None
    dataset_dir: str | None = None

    @classmethod
    def of_checkpoint(cls, checkpoint: Mapping[str, Any]) -> JobOrigin:
        """What ``checkpoint`` says of its job: nothing (all None) when it embeds no spec, or
        one of another shape (the archive is still made; it names no job)."""
        stored = checkpoint.get("spec")
        try:
            return read_stored(cls, stored) if isinstance(stored, Mapping) else cls()
        except InvalidInput:
            return cls()


def save_checkpoint(path: str | os.PathLike, checkpoint: dict,
                    before_rename: Callable[[], None] | None = None) -> Path:
    """Write ``checkpoint`` to ``path`` atomically (temp file, fsync, rename); return the path.

    ``before_rename`` runs once the temp file is on disk, just before the rename (a cluster
    rank's fence check; a test pauses a write there)."""
    import torch

    path = Path(path)
    checkpoint = {**checkpoint, "format": FORMAT}

    write_atomic(path, lambda f: torch.save(checkpoint, f), before_rename)
    return path


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Read a checkpoint without unpickling code (weights_only=True) and check its format."""
    import torch

    path = Path(path)  # a job's file: opened with no link, no FIFO, a regular file (core/jobfiles.py)
    with os.fdopen(jobfiles.open_beneath(path.parent, path.name), "rb") as f:
        checkpoint = torch.load(f, map_location=map_location, weights_only=True)
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        found = checkpoint.get("format") if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise CheckpointError(f"{Path(path).name} is not a {FORMAT} file (found {found!r})")
    return checkpoint


def build_model_from_checkpoint(checkpoint: dict) -> nn.Module:
    """The checkpoint's network with its weights, in eval mode, on the CPU."""
    from trainyard.artifact.network import create_model
    from trainyard.artifact.preprocessing import Preprocessing

    header = CheckpointHeader.of(checkpoint)
    channels, height, width = Preprocessing.of_checkpoint(checkpoint).input_shape
    model = create_model(header.network, header.network_source, len(header.classes),
                         channels, header.image_size, (height, width))
    if task_traits(header.task).boxes:
        from trainyard.networks.detection import fit_input

        fit_input(model, height, width)  # the stored size it trained at, not torchvision's own
    model.load_state_dict(checkpoint["model"])
    return model.eval()


def checkpoint_epochs(job_dir: str | os.PathLike) -> dict[float, Path]:
    """{epoch: path} of every complete checkpoint of a job (temp files are ignored)."""
    folder = JobFolder(job_dir).checkpoints  # in its work folder (core/paths.py)
    found = {}
    # Regular files of a real folder only: the job may make ``checkpoints`` a link (core/jobfiles.py).
    for name in jobfiles.regular_names(folder.parent, folder.name):
        path = folder / name
        epoch = checkpoint_epoch(path)
        if epoch is not None:
            found[epoch] = path
    return dict(sorted(found.items()))


def latest_checkpoint(job_dir: str | os.PathLike) -> Path | None:
    """The checkpoint of the latest epoch, or None if the job has none."""
    epochs = checkpoint_epochs(job_dir)
    return epochs[max(epochs)] if epochs else None


def checkpoint_for_epoch(job_dir: str | os.PathLike, epoch: float | None = None) -> Path:
    """The checkpoint of ``epoch`` (the latest for None); CheckpointError lists what exists."""
    if epoch is None:
        path = latest_checkpoint(job_dir)
        if path is None:
            raise CheckpointError("the job has no checkpoint yet")
        return path
    # NaN, inf or 1e308 would break the file name (ValueError, or an over-long name's OSError).
    if not math.isfinite(epoch) or not 0 <= epoch <= MAX_EPOCH:
        raise CheckpointError(f"epoch {epoch} is not an epoch number (0..{MAX_EPOCH:g})")
    epochs = checkpoint_epochs(job_dir)  # regular files only, not a link the job planted
    path = next((p for p in epochs.values() if p.name == checkpoint_name(epoch)), None)
    if path is None:
        have = ", ".join(f"{e:g}" for e in epochs) or "none"
        raise CheckpointError(f"no checkpoint for epoch {epoch:g} (epochs with one: {have})")
    return path
