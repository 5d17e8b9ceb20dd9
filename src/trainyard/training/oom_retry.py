"""Out of memory during training never ends a job: the step is retried at half the batch.

`StepGuard` runs each batch's loss; where it runs out of memory, `halve` puts the run back at
the end of the last complete optimizer step (the gradients of the failed one dropped, so no
partial update) with half the batch, the learning rate halved with it (the linear scaling rule,
as ``scale_lr`` scales with the process count), the schedule counted in the new batches (the
same epochs, the LR policy at the same fraction of training) and the change logged and recorded
as a ``batch_size`` event (and in the job's summary). Only a batch of 1 that does not fit fails
the job, with what to try.

With several ranks, only one may run out of memory; the others would wait for it in DDP's
gradient all-reduce. So each batch's forward pass ends with a flag gathered over the ranks
(the gloo control group: host memory, no device sync), and all halve together when any failed.
The backward pass is not covered: a rank that runs out of memory there leaves the others in the
all-reduce until the collective timeout, which fails the job as before.

Tests simulate it: ``TRAINYARD_INJECT_OOM=STEP[xTIMES][@RANK]`` raises `torch.OutOfMemoryError` in
the forward pass of optimizer step STEP (1-based, counted across the run), TIMES times in a row
(the retries of that step), on every rank or on rank RANK alone.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainyard.settings import process_settings
from trainyard.training import distributed
from trainyard.training.auto_batch import NOT_EVEN_ONE
from trainyard.training.event_points import Schedule
from trainyard.training.lr_policies import lr_factor
from trainyard.training.resume import restart_lr_schedule
from trainyard.training.state import Run, TrainingError

INJECT_SETTING = "TRAINYARD_INJECT_OOM"


class StepGuard:
    """Runs a batch's loss; agrees with the other ranks on whether any ran out of memory."""

    def __init__(self, run: Run, inject: str | None = None):
        self.run = run
        self.steps_done = run.batches // run.stepper.accumulation  # optimizer steps done
        self.fault_step, self.faults_left = _parse(inject if inject is not None else process_settings().inject_oom,
                                                   run.dist.rank)

    def after_step(self, batches: int) -> None:
        self.steps_done = batches // self.run.stepper.accumulation

    def loss(self, step_loss: Callable, model, images, labels):
        failed: torch.OutOfMemoryError | None = None
        result = None
        try:
            self._inject()
            result = step_loss(model, images, labels)
        except torch.OutOfMemoryError as exc:
            failed = exc
        d = self.run.dist
        if d.world_size > 1 and any(distributed.gather(failed is not None, d)):
            raise failed or torch.OutOfMemoryError("another rank ran out of memory")
        if failed is not None:
            raise failed
        return result

    def _inject(self) -> None:
        if self.faults_left and self.steps_done + 1 == self.fault_step:
            self.faults_left -= 1
            raise torch.OutOfMemoryError(f"injected out of memory at step {self.fault_step} ({INJECT_SETTING})")


def _parse(text: str | None, rank: int) -> tuple[int, int]:
    """(step, times) of ``STEP[xTIMES][@RANK]`` for ``rank``; (0, 0) when unset or for another rank."""
    text, _, only = (text or "").partition("@")
    if not text or (only and int(only) != rank):
        return 0, 0
    step, _, times = text.partition("x")
    return int(step), int(times or 1)


def halve(run: Run, done: int) -> int:
    """Halve the run's batch after a failed step; return the global batch count to go on from
    (where ``done``, the last complete step, stands in the new batches). TrainingError at 1."""
    loader, stepper, old_schedule = run.train_loader, run.stepper, run.schedule
    old = loader.batch_size
    if old <= 1:
        raise TrainingError(NOT_EVEN_ONE)
    stepper.optimizer.zero_grad(set_to_none=True)  # the failed step's partial gradients
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    new = old // 2
    for each in (loader, run.val_loader):
        if each is not None:
            each.batch_size = min(each.batch_size, new)
    spec = run.spec
    run.schedule = Schedule(len(loader), spec.epochs, spec.accumulation, spec.val_interval, spec.snapshot_interval)
    epoch, within = divmod(done, old_schedule.batches_per_epoch)
    position = epoch * run.schedule.batches_per_epoch + within * old // new
    position = min(position - position % stepper.accumulation, run.schedule.total_batches)
    ratio = new / old
    run.base_lr *= ratio
    total = run.schedule.total_iterations  # the policy's percentages are of the new count

    def factor(iteration: int) -> float:  # a plain closure, as create_scheduler's (state_dict skips it)
        return lr_factor(spec.lr, iteration, total)

    stepper.scheduler.lr_lambdas = [factor for _ in stepper.scheduler.lr_lambdas]
    restart_lr_schedule(stepper, ratio, position // stepper.accumulation)
    run.events.log(f"out of memory at a batch of {old}: continuing at a batch of {new}, base LR "
                   f"{run.base_lr:g} (halved with it), from epoch {run.schedule.epoch_of(position):g}", "warning")
    run.events.emit("batch_size", old=old, new=new, base_lr=run.base_lr, epoch=run.schedule.epoch_of(position))
    run.events.emit("summary", batch_size=new)
    return position
