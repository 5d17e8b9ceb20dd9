"""Each training setting's default and its one-line help: the one place both are written.

`training/train_settings.py`'s `TrainSettings` (the body of ``POST /api/models``'s ``settings``,
and so spec.json's fields) takes its defaults and descriptions from here, and the CLI's ``train``
options (cli/train.py) take theirs from here too. This module imports no pydantic: ``train
--help`` must stay light (tests/cli/test_cli_lazy.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

Precision = Literal["auto", "fp32", "bf16", "fp16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
AUTO_BATCH = "auto"  # batch_size: the largest that fits, found by the job (training/auto_batch.py)


@dataclass(frozen=True)
class Setting:
    default: Any
    help: str


# A setting's name is its TrainSettings field (``lr.*``: the LR panel's fields).
SETTINGS: dict[str, Setting] = {
    "epochs": Setting(30.0, "epochs to train (fractions allowed)"),
    "batch_size": Setting(None, "images per batch, per GPU or process (none: the network's default; "
                                "auto: the largest that fits)"),
    "accumulation": Setting(1, "batches per optimizer step"),
    "solver": Setting("sgd", "the optimizer, by its DIGITS name"),
    "momentum": Setting(0.9, "SGD's momentum (Adam's beta1, AdaDelta's decay rate)"),
    "weight_decay": Setting(1e-4, "L2 weight decay"),
    "ema": Setting(0.0, "validate and save a moving average of the weights with this decay (0.9999; "
                   "ramped up over the first few thousand steps); 0: off"),
    "snapshot_interval": Setting(1.0, "epochs between checkpoints (0: only at the end)"),
    "val_interval": Setting(1.0, "epochs between validations (0: only at the end)"),
    "seed": Setting(None, "random seed (none: one drawn at random, recorded in the log and checkpoints)"),
    "crop": Setting(None, "train on random crops of this side (validate on the centre crop)"),
    "mean": Setting("image", "the mean subtracted from each input"),
    "precision": Setting("auto", " | ".join(PRECISIONS)),
    "compile": Setting(False, "compile the network with torch.compile"),
    "channels_last": Setting(True, "channels-last memory layout for standard networks (GPU only)"),
    "freeze_backbone": Setting(False, "with pretrained weights: train only the classifier"),
    "backbone_lr_mult": Setting(
        1.0, "with pretrained weights: the backbone's LR as a fraction of the classifier's, e.g. 0.1"),
    "processes": Setting(1, "data-parallel processes on the CPU (gloo), e.g. to test multi-GPU runs"),
    "scale_lr": Setting(False, "multiply the LR by the number of GPUs/processes (linear scaling)"),
    "nnodes": Setting(1, "machines taking part in this one job (each runs it with its node rank)"),
    "node_rank": Setting(0, "this machine's place among the nodes, 0 to N-1"),
    "master": Setting(None, "HOST:PORT where node 0 meets the others (with several nodes)"),
    "max_restarts": Setting(
        0, "cluster mode: resume from the last checkpoint up to K times after a lost worker or node"),
    "min_workers": Setting(
        None, "cluster mode, elastic: after a lost node, continue from the last checkpoint on as few as K "
        "workers (the same global batch, by gradient accumulation), and grow back when nodes return"),
    "lr.policy": Setting("step", "the learning-rate policy"),
    "lr.base_lr": Setting(0.01, "base learning rate"),
    "lr.step_percent": Setting(33.0, "step size, in percent of training (sigmoid: its midpoint)"),
    "lr.steps_percent": Setting((50.0, 85.0), "multistep points in percent, e.g. 50,85"),
    "lr.gamma": Setting(0.1, "the policy's gamma (step, multistep, exp, inv, sigmoid)"),
    "lr.power": Setting(0.5, "the policy's power (inv, poly)"),
    "lr.warmup_percent": Setting(0.0, "linear warm-up, in percent of training"),
    "lr.warmup_start_factor": Setting(0.1, "the warm-up's first LR, as a fraction of the base LR"),
}


# A sweep's setting, not a job's (TrainRequest's, beside ``settings``): not in SETTINGS, whose
# names are TrainSettings' fields. Judged after one epoch, later runs of a sweep on a one-slot
# queue met a finished first run's curve and 5 of 6 stopped at epoch 1 (issue 31).
EARLY_STOP_MIN_EPOCHS = Setting(3.0, "with --early-stop: epochs every run trains before it is judged")


def setting(name: str, **constraints: Any) -> Any:
    """The pydantic field of setting ``name``: its default and description from SETTINGS, and
    ``constraints`` (gt, le, ...). A tuple default becomes a fresh list for each model."""
    from pydantic import Field  # here: this module stays importable without pydantic

    value = SETTINGS[name].default
    if isinstance(value, tuple):
        return Field(default_factory=lambda: list(value), description=SETTINGS[name].help, **constraints)
    return Field(value, description=SETTINGS[name].help, **constraints)


def default(name: str) -> Any:
    return SETTINGS[name].default


def help_of(name: str) -> str:
    return SETTINGS[name].help
