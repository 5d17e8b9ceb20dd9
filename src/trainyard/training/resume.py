"""Continuing a run from a checkpoint: exactly (same device type and process count, on the
CPU), or at the equivalent place with another process count or device.

A checkpoint does not depend on ranks: the weights are the network's own state_dict (no DDP
``module.`` prefix), the optimizer state is the same on every rank, and the data order of each
epoch is a pure function of (seed, epoch) (data.py). What "exact" means:

- Same global batch (the usual case: the same number of processes): the resumed run is the run
  that was never stopped: the same images in every global batch, the same LR at every step, and
  each rank's own RNG state back (checkpoints keep one per rank), so the same crops and dropout.
- Another global batch (more or fewer GPUs, with the batch size per GPU kept): the run continues
  in the same epoch, from the global batch that holds the first image not yet trained on (at most
  one global batch of images is seen twice), with the LR policy at the same fraction of
  training; the number of steps left changes with the global batch. With ``scale_lr`` the base
  LR follows the new process count. Random crops and dropout restart from per-rank seeds. This
  is the equivalent position, not a bit-for-bit continuation.
- Another number of workers of an elastic cluster job (training/elastic.py): the same images in
  every optimizer step, by accumulation, so the same run but for float rounding (and batch norm's
  per-rank statistics).
- Another device type (a GPU job resumed on the CPU, or the reverse) or another GPU model: the
  same images in the same global batches at the same LR, but not the same numbers. The CUDA
  generators (Philox) draw other crops, flips and dropout masks than the CPU's (mt19937) from
  the same seed, a checkpoint's CUDA RNG states are restored only on as many GPUs as it saved
  (otherwise dropped), and the kernels themselves sum in another order (cuDNN, TF32, AMP), so
  losses differ from the first step on. Bit-for-bit holds only on the same device type, the same
  process count, and (on GPUs) the same precision; even then cuDNN's autotuner
  (``cudnn.benchmark``) may pick other kernels in another process, so on GPUs expect agreement to
  float rounding rather than equal bits.
"""

from __future__ import annotations

import torch

from trainyard.artifact.checkpoint import CheckpointHeader
from trainyard.training.distributed import Dist, rank_seed
from trainyard.training.state import (
    Run,
    Stepper,
    TrainingError,
    load_scheduler_state,
    restore_rng_state,
)


def resume_run(run: Run, ckpt: dict) -> None:
    """Load the optimizer side, RNG and position of ``ckpt`` into a freshly built run."""
    saved_global = int(ckpt.get("global_batch") or run.global_batch)  # older checkpoints: 1 process
    _check_same_data(run, ckpt, saved_global)
    stepper = run.stepper
    stepper.optimizer.load_state_dict(ckpt["optimizer"])
    load_scheduler_state(stepper.scheduler, ckpt["scheduler"])
    if stepper.scaler is not None and ckpt.get("scaler"):
        stepper.scaler.load_state_dict(ckpt["scaler"])
    batches = int(ckpt["batches"])
    step_images = run.global_batch * stepper.accumulation
    if saved_global != run.global_batch and saved_global * int(ckpt.get("accumulation") or 1) == step_images:
        batches = equivalent_position(run, ckpt, saved_global)  # exact: the same images in every step
        run.events.log(f"continuing on {run.dist.world_size} worker(s), {stepper.accumulation} batches of "
                       f"{run.train_loader.batch_size} per optimizer step: the same global batch of "
                       f"{step_images} images (elastic)")
    elif saved_global != run.global_batch:
        batches = equivalent_position(run, ckpt, saved_global)
        run.events.log(
            f"resuming with a global batch of {run.global_batch} images ({run.dist.world_size} "
            f"process(es) x {run.train_loader.batch_size}) instead of {saved_global}: continuing at "
            f"epoch {run.schedule.epoch_of(batches):g} of {run.schedule.total_iterations} "
            "iterations, LR policy at the same fraction of training", "warning")
    saved_lr = float(ckpt.get("base_lr") or run.base_lr)
    if batches != int(ckpt["batches"]) or saved_lr != run.base_lr:
        restart_lr_schedule(stepper, run.base_lr / saved_lr, batches // stepper.accumulation)
    restore_rank_rng(ckpt["rng"], run.dist, batches)
    run.batches = batches
    header = CheckpointHeader.of(ckpt)
    run.metrics = {k: [list(p) for p in v] for k, v in header.metrics.items()}
    run.best = header.best
    run.task_state.update({key: ckpt[key] for key in ckpt.get("task_state_keys") or () if key in ckpt})


def keeps_big_last_batch(ckpt: dict | None) -> bool:
    """Whether an epoch keeps a big incomplete last batch (training/data.py): always in a new run;
    in a resumed one, as the checkpoint's run did. A checkpoint written before that rule has no
    entry for it and dropped every incomplete last batch, which its batches per epoch count on."""
    return ckpt is None or bool(ckpt.get("keeps_big_last_batch", False))


def _check_same_data(run: Run, ckpt: dict, saved_global: int) -> None:
    images = len(run.train_loader.reader)
    saved_images = ckpt.get("train_images", images)
    same_batches = ckpt.get("batches_per_epoch") == run.schedule.batches_per_epoch
    if saved_images != images or (saved_global == run.global_batch and not same_batches):
        raise TrainingError(
            f"cannot resume: the checkpoint has {ckpt.get('batches_per_epoch')} batches per epoch, "
            f"this run {run.schedule.batches_per_epoch} (did the dataset or the batch size change?)")


def equivalent_position(run: Run, ckpt: dict, saved_global: int) -> int:
    """The global batch count, at this run's global batch, where the checkpoint stood.

    Rounded down (to a whole global batch, and to an optimizer step): the images of the
    partial batch are trained on again rather than skipped.
    """
    schedule = run.schedule
    if CheckpointHeader.of(ckpt).epoch >= schedule.epochs:
        return schedule.total_batches  # it had finished: stay finished
    epoch, within = divmod(int(ckpt["batches"]), int(ckpt["batches_per_epoch"]))
    batches = epoch * schedule.batches_per_epoch + within * saved_global // run.global_batch
    batches -= batches % schedule.accumulation
    return min(batches, schedule.total_batches)


def restart_lr_schedule(stepper: Stepper, lr_ratio: float, iteration: int) -> None:
    """Put the LR scheduler at ``iteration`` of this run, its base LRs scaled by ``lr_ratio``.

    LambdaLR computes each group's LR as base_lr x factor(iteration), with the factor from the
    policy in percent of this run's iterations, so this is the LR at the same fraction of
    training.
    """
    scheduler, groups = stepper.scheduler, stepper.optimizer.param_groups
    scheduler.base_lrs = [base * lr_ratio for base in scheduler.base_lrs]
    scheduler.last_epoch = iteration
    lrs = [base * factor(iteration) for base, factor in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, base, lr in zip(groups, scheduler.base_lrs, lrs):
        group["initial_lr"], group["lr"] = base, lr
    scheduler._last_lr = lrs  # what get_last_lr() reports until the next step


def restore_rank_rng(state: dict, d: Dist, batches: int) -> None:
    """Each rank's RNG from the checkpoint; where it holds none for this rank, a derived seed."""
    ranks = state.get("ranks")
    if ranks and len(ranks) == d.world_size:
        restore_rng_state(ranks[d.rank])
    elif d.rank == 0:
        restore_rng_state(state)
    else:
        torch.manual_seed(rank_seed(int(state["seed"]), d.rank, batches))
