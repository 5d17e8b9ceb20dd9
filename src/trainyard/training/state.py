"""What a training run is made of, apart from how it is built: `Run`, its optimizer side
(`Stepper`), `TrainingError`, the RNG and LR-scheduler states, and `checkpoint_state`: all a
checkpoint carries.

build_run.py builds a `Run`, resume.py loads a checkpoint's state into one and loop.py trains
it; all three import this module, none imports another for these types.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainyard.artifact.checkpoint import CheckpointHeader
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.errors import UserError
from trainyard.core.events import EventWriter
from trainyard.training.data import BatchLoader, BatchLoaderBase
from trainyard.training.distributed import SINGLE, Dist
from trainyard.training.ema import WeightAverage, checkpoint_entries
from trainyard.training.event_points import Schedule
from trainyard.training.spec import ModelSpec


class TrainingError(UserError, RuntimeError):
    """A problem the user can fix; the message says how (it becomes the job's error)."""


@dataclass
class Stepper:
    """The optimizer side of training: autocast, scaled backward, accumulation, step, LR schedule."""

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR  # create_scheduler's: resume reads its lr_lambdas
    scaler: torch.amp.GradScaler | None
    device_type: str
    dtype: torch.dtype | None  # autocast dtype; None = float32
    accumulation: int = 1
    ddp: DistributedDataParallel | None = None  # the model's DDP wrapper, when data-parallel
    ema: WeightAverage | None = None  # the weights' moving average (ema.py), when the spec asks

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def sync(self, stepping: bool):
        """Around one batch's forward and backward: DDP averages gradients over the ranks only
        on the batch that ends an accumulation (the others would all-reduce for nothing)."""
        if self.ddp is None or stepping:
            return contextlib.nullcontext()
        return self.ddp.no_sync()

    def backward(self, loss: torch.Tensor) -> None:
        if self.accumulation > 1:
            loss = loss / self.accumulation  # gradients of the mean over the accumulated batches
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def step(self) -> None:
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update()
        self.scheduler.step()  # per iteration: the policies are in percent of all iterations

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]


@dataclass
class Run:
    spec: ModelSpec
    job_dir: Path
    events: EventWriter
    device: torch.device
    net: nn.Module  # the network itself: what checkpoints save (no DDP "module." prefix)
    model: nn.Module  # what trains: net, torch.compile(net), DDP(net) or torch.compile(DDP(net))
    stepper: Stepper
    train_loader: BatchLoaderBase  # the task's (classification's BatchLoader, detection's...)
    val_loader: BatchLoaderBase | None
    schedule: Schedule
    classes: list[str]
    image_size: int
    preprocess: Preprocessing  # written into each checkpoint as its stored dict
    seed: int
    trainable: list[str] | None = None  # None: every parameter trains
    head: list[str] | None = None  # the classifier's tensors when fine-tuning (its own LR group)
    batches: int = 0  # global batches done (the resume point)
    metrics: dict[str, list] = field(default_factory=dict)
    best: dict | None = None
    dist: Dist = SINGLE
    eval_model: nn.Module | None = None  # what validates: model without DDP (no collectives)
    base_lr: float = 0.0  # spec.lr.base_lr, times the process count with scale_lr
    # a fine-tune's training images, on which its BatchNorm statistics are recomputed before each
    # validation and checkpoint (training/transfer.py); None: the running averages stay as they are
    batchnorm_refresh: BatchLoader | None = None
    # what the task's validation keeps for the checkpoints (a multi-label classifier's thresholds)
    task_state: dict = field(default_factory=dict)

    @property
    def global_batch(self) -> int:
        """Images per global batch: the batch size of each of the world_size processes."""
        return self.train_loader.batch_size * self.dist.world_size


def rng_state(seed: int, device: torch.device | None = None) -> dict:
    """The global torch RNG states (CPU and every CUDA device) and the run's seed.

    With ``device`` (one rank of several, each on its own GPU), only that GPU's state: asking
    every visible GPU would start a CUDA context on each from every rank.
    """
    if device is not None and device.type == "cuda":
        return {"seed": int(seed), "torch": torch.get_rng_state(),
                "cuda": [torch.cuda.get_rng_state(device)], "cuda_device": device.index}
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return {"seed": int(seed), "torch": torch.get_rng_state(), "cuda": list(cuda)}


def restore_rng_state(state: dict) -> None:
    """Put back what `rng_state` saved: the CPU state always, the CUDA states only on as many
    GPUs as saved them (a GPU checkpoint resumed on the CPU, or on another GPU count, drops them:
    its random crops and dropout then differ from the uninterrupted run's; see resume.py)."""
    torch.set_rng_state(state["torch"].cpu())
    cuda = state.get("cuda") or []
    if not cuda or not torch.cuda.is_available():
        return
    if "cuda_device" in state:  # one rank's own GPU: restore it to this process's GPU
        torch.cuda.set_rng_state(cuda[0].cpu(), torch.cuda.current_device())
    elif len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in cuda])


def scheduler_state(scheduler) -> dict:
    """A LambdaLR state without its lambdas (closures are rebuilt from the spec, not pickled)."""
    return {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}


def load_scheduler_state(scheduler, state: dict) -> None:
    lambdas = getattr(scheduler, "lr_lambdas", [])
    scheduler.load_state_dict({**state, "lr_lambdas": [None] * len(lambdas)})


def checkpoint_state(run: Run, epoch: float, batches: int, rng: dict | None = None) -> dict:
    """Everything a checkpoint holds (see artifact/checkpoint.py)."""
    stepper = run.stepper
    return {
        **checkpoint_entries(run.net, stepper.ema),  # "model": the average where there is one
        # network, network_source, task (what inference answers: classes, or boxes), classes,
        # image_size, epoch, metrics, best, spec: artifact/checkpoint.py's typed header
        **CheckpointHeader(network=run.spec.network, network_source=run.spec.network_source, task=run.spec.task,
                           classes=run.classes, image_size=run.image_size, epoch=epoch, metrics=run.metrics,
                           best=run.best, spec=run.spec.model_dump(mode="json")).entries(),
        "preprocess": run.preprocess.to_dict(),
        "optimizer": stepper.optimizer.state_dict(),
        "scheduler": scheduler_state(stepper.scheduler),
        "scaler": stepper.scaler.state_dict() if stepper.scaler else None,
        "rng": rng or rng_state(run.seed),
        "iteration": batches // stepper.accumulation,
        "batches": batches,
        "batches_per_epoch": run.schedule.batches_per_epoch,
        "keeps_big_last_batch": run.train_loader.keep_big_last,  # absent: an older checkpoint's rule
        "world_size": run.dist.world_size,
        "global_batch": run.global_batch,
        "accumulation": stepper.accumulation,  # with global_batch: the images of one optimizer step
        "train_images": len(run.train_loader.reader),
        "base_lr": run.base_lr,
        "trainable": run.trainable,
        "head": run.head,
        **run.task_state,
        "task_state_keys": list(run.task_state),  # what a resume takes back into task_state
    }
