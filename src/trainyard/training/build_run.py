"""Everything one training run needs, built from its spec, its dataset and (on resume) a checkpoint.

`prepare` returns a `Run`: the device, the network (and its compiled and DDP forms), the
optimizer side (`Stepper`), the batch loaders, the event `Schedule` and where training stands.
The network and its starting weights come from starting_network.py.
A fresh run seeds torch before building the network; a resumed run loads model, optimizer,
scheduler, AMP scaler and RNG states from its checkpoint (resume.py), so it continues as if it
had never stopped: bit for bit on the same device type and process count, at the equivalent
place otherwise (resume.py says exactly what holds). With several processes (``Dist``), each
builds the same network from the same seed, wraps it in DistributedDataParallel and reads its
shard of every global batch.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.artifact.device import GpuUnusable, require_leased_gpus
from trainyard.artifact.normalize import mean_tensor, std_tensor
from trainyard.artifact.preprocessing import DEFAULT_RESIZE, Preprocessing
from trainyard.core import environment
from trainyard.core.errors import InvalidInput
from trainyard.core.events import EventWriter
from trainyard.core.files import read_json
from trainyard.datasets.info import INFO_FILE, DatasetInfo
from trainyard.datasets.storage import SplitReader, open_split, split_names
from trainyard.training import auto_batch, distributed, transfer
from trainyard.training.data import BatchLoader, BatchLoaderBase
from trainyard.training.detection import build as detection_build
from trainyard.training.distributed import SINGLE, Dist
from trainyard.training.ema import resumed_average
from trainyard.training.event_points import Schedule
from trainyard.training.lr_policies import create_scheduler
from trainyard.training.memory_format import to_channels_last, use_channels_last
from trainyard.training.resume import keeps_big_last_batch, resume_run
from trainyard.training.segmentation import build as segmentation_build
from trainyard.training.setting_defaults import AUTO_BATCH
from trainyard.training.solvers import create_optimizer
from trainyard.training.spec import ModelSpec, dataset_folder
from trainyard.training.starting_network import build_network
from trainyard.training.state import Run, Stepper, TrainingError
from trainyard.training.steps import TASKS
from trainyard.weights import finetune

# The tasks whose batches carry more than a class per image (core/tasks.py names the tasks), each
# with its loaders; classification's are _classification_data's (mean image, crops, BatchNorm refresh).
TARGET_LOADERS: dict[str, Callable[..., tuple[BatchLoaderBase, BatchLoaderBase | None, Preprocessing]]] = {
    "detection": detection_build.loaders, "segmentation": segmentation_build.loaders}


def pick_device(d: Dist = SINGLE) -> torch.device:
    """The job's GPU (the runner sets CUDA_VISIBLE_DEVICES to its lease; with several, this
    process's LOCAL_RANK picks one), else the CPU. A job given real GPUs that CUDA cannot use
    fails here, naming the cause (artifact/device.py), instead of training on the CPU."""
    try:
        leased = require_leased_gpus()
    except GpuUnusable as exc:
        raise TrainingError(str(exc)) from None
    if not leased and not torch.cuda.is_available():
        return torch.device("cpu")
    torch.backends.cudnn.benchmark = True  # fixed input shapes: let cuDNN pick its fastest kernels
    torch.backends.cuda.matmul.allow_tf32 = True  # fp32 runs use tensor cores too
    torch.backends.cudnn.allow_tf32 = True
    if d.enabled:
        return torch.device("cuda", d.local_rank)
    return torch.device("cuda", torch.cuda.current_device())


def check_processes(spec: ModelSpec, d: Dist) -> None:
    # Several copies of this loop without a process group would each train alone and write the
    # same files: they must come from torch.distributed.run (the job's command does that).
    wanted = spec.processes * spec.nnodes
    if not d.enabled and (wanted > 1 or environment.world_size() > 1):
        raise TrainingError(f"this job asks for {wanted} processes: start it through "
                            "torch.distributed.run (as trainyard does), not as one process")


# Compute capability from which GPUs have bf16 tensor cores (Ampere, 8.0). Older ones (V100 7.0,
# T4 7.5) emulate bf16, which `torch.cuda.is_bf16_supported()` counts as support: fp16 with a
# GradScaler is their fast mixed precision.
BF16_CAPABILITY = (8, 0)


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The AMP dtype for a precision setting: auto = bf16 on Ampere and later GPUs, fp16 (with a
    GradScaler, see `prepare`) on older ones, fp32 on the CPU."""
    if precision == "auto":
        if device.type != "cuda":
            return None
        native = torch.cuda.get_device_capability(device) >= BF16_CAPABILITY
        return torch.bfloat16 if native else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def open_dataset(spec: ModelSpec) -> tuple[DatasetInfo, SplitReader, SplitReader | None, np.ndarray | None]:
    """(info, train split, val split or None when it is empty or absent, mean image or None)."""
    folder = Path(dataset_folder(spec))
    if not (folder / INFO_FILE).is_file():
        raise TrainingError(f"dataset {spec.dataset_id} is not built ({folder} has no {INFO_FILE})")
    info = DatasetInfo.of(read_json(folder / INFO_FILE))
    train = open_split(folder, "train")
    val = open_split(folder, "val") if "val" in split_names(folder) else None
    mean_path = folder / "mean.npy"
    mean = np.load(mean_path) if mean_path.is_file() else None
    return info, train, (val if val is not None and len(val) else None), mean


def check_geometry(spec: ModelSpec, height: int, width: int) -> int:
    """The network's input size (crop, else the short side); TrainingError if it cannot work."""
    try:
        return spec.input_side(height, width)
    except InvalidInput as exc:  # the job's own error: its message is the job's
        raise TrainingError(str(exc)) from None


def prepare(spec: ModelSpec, job_dir: Path, events: EventWriter, resume: Path | dict | None = None,
            d: Dist = SINGLE) -> Run:
    """Build the run; continue from the checkpoint ``resume`` (a path, or one already loaded).

    ``d`` is this process's place in a data-parallel job (`distributed.setup`); every rank
    calls prepare with the same spec and checkpoint.
    """
    check_processes(spec, d)
    ckpt = load_checkpoint(resume) if isinstance(resume, (str, os.PathLike)) else resume
    seed = ckpt["rng"]["seed"] if ckpt else spec.seed if spec.seed is not None else secrets.randbelow(2**31)
    seed = distributed.broadcast(seed, d)  # rank 0's random seed, when the spec has none
    torch.manual_seed(seed)  # the network's initial weights: the same on every rank
    device = pick_device(d)
    info, train_split, val_split, mean = open_dataset(spec)
    height, width, channels = train_split.shape
    classes = list(info.classes)
    image_size = check_geometry(spec, height, width)

    input_size = (spec.crop, spec.crop) if spec.crop else (height, width)
    net, trainable, head = build_network(spec, ckpt, len(classes), channels, image_size, input_size, events)
    net.to(device)
    channels_last = use_channels_last(spec, device) and to_channels_last(net)
    params = [p for p in net.parameters() if p.requires_grad]
    if not params:
        raise TrainingError("no parameter is left to train (freeze_backbone froze them all)")
    if d.rank > 0:
        torch.manual_seed(distributed.rank_seed(seed, d.rank))  # own dropout masks per rank

    batch_size = spec.default_batch_size()
    targets = TARGET_LOADERS.get(spec.task)
    if targets is not None:  # boxes or masks for targets, no mean (the network normalises inside)
        train_loader, val_loader, preprocess = targets(spec, info, train_split, val_split, batch_size, device,
                                                       seed, d, net)
        refresh = None
    else:
        train_loader, val_loader, preprocess, refresh = _classification_data(
            spec, ckpt, info, train_split, val_split, mean, batch_size, device, seed, d, net, channels_last, events)
    train_loader.keep_big_last = keeps_big_last_batch(ckpt)  # before len(): it counts the batches
    dtype = autocast_dtype(spec.precision, device)
    if spec.batch_size == AUTO_BATCH:  # the largest that fits, before the schedule counts batches
        auto_batch.settle(net, [train_loader, val_loader], TASKS[spec.task].step_loss, dtype, batch_size,
                          ckpt, d, events)
    if not len(train_loader):
        raise TrainingError(f"dataset {spec.dataset_id} has no training images")
    if trainable is not None and (frozen := transfer.keep_frozen_batchnorm_in_eval(net)):
        events.log(f"freeze_backbone: {frozen} frozen BatchNorm layers normalise with their running "
                   "statistics in training as in validation (eval mode)")
    schedule = Schedule(len(train_loader), spec.epochs, spec.accumulation, spec.val_interval,
                        spec.snapshot_interval)

    base_lr = spec.lr.base_lr * (d.world_size if spec.scale_lr else 1)
    stepper = _stepper(spec, net, params, head, base_lr, schedule, device, dtype, ckpt)
    run = Run(spec, Path(job_dir), events, device, net, net, stepper, train_loader, val_loader,
              schedule, classes, image_size, preprocess, seed, trainable, head, dist=d, base_lr=base_lr,
              batchnorm_refresh=refresh)
    if ckpt:
        resume_run(run, ckpt)
    _wrap(run)
    return run


def _stepper(spec: ModelSpec, net: nn.Module, params: list[nn.Parameter], head: list[str] | None,
             base_lr: float, schedule: Schedule, device: torch.device, dtype: torch.dtype | None,
             ckpt: dict | None) -> Stepper:
    """The optimizer, its LR schedule, the loss scaler (float16 only) and the weight average."""
    groups: list[nn.Parameter] | list[dict] = params
    if head is not None and spec.backbone_lr_mult != 1:  # the backbone learns more slowly
        groups = finetune.parameter_groups(net, head, base_lr, spec.backbone_lr_mult)
    optimizer = create_optimizer(spec.solver, groups, base_lr, spec.momentum, spec.weight_decay)
    scheduler = create_scheduler(optimizer, spec.lr, schedule.total_iterations)
    scaler = torch.amp.GradScaler(device.type) if dtype == torch.float16 else None
    return Stepper(optimizer, scheduler, scaler, device.type, dtype, spec.accumulation,
                   ema=resumed_average(net, spec.ema, ckpt))


def _classification_data(spec: ModelSpec, ckpt: dict | None, info: DatasetInfo, train_split: SplitReader,
                         val_split: SplitReader | None, mean: np.ndarray | None, batch_size: int,
                         device: torch.device, seed: int, d: Dist, net: nn.Module, channels_last: bool,
                         events: EventWriter) -> tuple[BatchLoader, BatchLoader | None, Preprocessing,
                                                       BatchLoader | None]:
    """(train loader, val loader, preprocessing, BatchNorm refresh loader) of images with labels."""
    mean, mean_mode, std = transfer.input_normalisation(spec, ckpt, mean, train_split.shape, events)
    std = std or transfer.dataset_std(info, events)
    mean_t = mean_tensor(mean, mean_mode, spec.crop, device)
    loader_args: dict[str, Any] = dict(mean=mean_t, crop=spec.crop, seed=seed, channels_last=channels_last,
                       rank=d.rank, world_size=d.world_size, std=std_tensor(std, device))
    train_loader = BatchLoader(train_split, batch_size, device, train=True, augment=spec.augment, **loader_args)
    val_loader = BatchLoader(val_split, batch_size, device, **loader_args) if val_split else None
    refresh = None
    if spec.pretrained and len(train_loader):  # BatchNorm statistics made on other images, for other weights
        statistics_loader = BatchLoader(train_split, batch_size, device, **loader_args)
        if not ckpt:
            transfer.recalibrate(net, statistics_loader, events, known=std is not None)
        refresh = transfer.refresh_loader(net, statistics_loader, events)
    height, width, channels = train_split.shape
    preprocess = Preprocessing(width=width, height=height, channels=channels, depth=train_split.depth,
                               resize=info.resize or DEFAULT_RESIZE, mean_mode=mean_mode, crop=spec.crop,
                               std=tuple(std) if std else None,
                               mean=torch.from_numpy(mean.astype(np.float32)) if mean is not None else None)
    return train_loader, val_loader, preprocess, refresh


def _wrap(run: Run) -> None:
    """The forms that run: DDP over the ranks for training, compiled if asked."""
    net, d = run.net, run.dist
    eval_model = _compiled(net) if run.spec.compile else net
    run.eval_model = eval_model
    if not d.enabled:
        run.model = eval_model
        return
    # DDP broadcasts rank 0's weights now and averages gradients in buckets during backward.
    ddp = DistributedDataParallel(net, device_ids=[run.device.index] if run.device.type == "cuda" else None)
    run.stepper.ddp = ddp
    run.model = _compiled(ddp) if run.spec.compile else ddp


def _compiled(module: nn.Module) -> nn.Module:
    # torch.compile's stub returns a plain Callable; given a Module it returns an OptimizedModule,
    # an nn.Module subclass (unwrap_model relies on it).
    return cast(nn.Module, torch.compile(module))
