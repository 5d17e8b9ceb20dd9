"""The training loop: `train_one_epoch`, `evaluate`, and `train`, which runs a whole job.

No host synchronisation per step: the training loss is summed on the device and read back a
few times an epoch (`Schedule`), which is also when the loss is checked for divergence and
when metrics, learning rate, speed and progress go to events.jsonl. At each validation point
the val loss, top-1 and top-5 accuracy (in percent) are reported with a summary; at each
snapshot point a checkpoint is written, then announced with a ``checkpoint`` event. What a step's
loss and a validation are comes from the spec's task (steps.py's `TASKS`): a detector's step sums
its losses (each one reported too) and its validation reports COCO mAP, its best by val_map50.

With several processes (DDP, distributed.py) every rank runs this loop on its shard; losses and
validation counts are summed over the ranks at those same read-back points, so every rank sees
the figures of the whole global batch and the whole validation set, and rank 0's events
(``run.events`` writes nothing on the other ranks) report them.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch import nn

from trainyard.core.events import EventWriter
from trainyard.core.jobproc import Aborted, Paused
from trainyard.core.paths import CHECKPOINTS_DIR, checkpoint_name
from trainyard.core.rank_threads import threads_note
from trainyard.training import distributed, oom_retry, transfer
from trainyard.training.build_run import prepare
from trainyard.training.checkpoint_writer import CheckpointWriter
from trainyard.training.data import BatchLoaderBase
from trainyard.training.diagnosis import diagnose
from trainyard.training.distributed import SINGLE, Dist
from trainyard.training.epoch_log import EpochLog
from trainyard.training.event_points import Point
from trainyard.training.spec import ModelSpec
from trainyard.training.state import Run, Stepper, TrainingError, checkpoint_state, rng_state
from trainyard.training.steps import TASKS, LossMeter, StepLoss, classification_loss, evaluate

__all__ = ["LossMeter", "Reporter", "evaluate", "train", "train_one_epoch"]


def train_one_epoch(model: nn.Module, loader: BatchLoaderBase, stepper: Stepper, meter: LossMeter,
                    epoch: int, *, start: int = 0, stop: int | None = None,
                    after_step: Callable[[int], None] = lambda batches: None,
                    step_loss: StepLoss = classification_loss) -> None:
    """Train on batches ``start``..``stop`` of ``epoch``; ``after_step(global batches)`` follows
    every optimizer step (every ``stepper.accumulation`` batches, counted across epochs).
    ``step_loss(model, images, labels)`` gives (loss, its named parts or None)."""
    model.train()
    per_epoch = len(loader)
    for index, (images, labels) in enumerate(loader.batches(epoch, start, stop), start):
        batches = epoch * per_epoch + index + 1
        stepping = batches % stepper.accumulation == 0
        with stepper.sync(stepping):
            with stepper.autocast():
                loss, parts = step_loss(model, images, labels)
            meter.add(loss, parts)
            stepper.backward(loss)
        if stepping:
            stepper.step()
            after_step(batches)


class Reporter:
    """Turns the run's progress into events: metrics, progress, summaries and checkpoints."""

    def __init__(self, run: Run, should_stop: Callable[[], bool]):
        self.run = run
        self.events: EventWriter = run.events
        self.should_stop = should_stop
        self.task = TASKS[run.spec.task].for_run(run)
        self.meter = LossMeter(run.device, run.dist)
        self.checkpoints = CheckpointWriter(run.events)  # writes off the training thread
        self.started = self.mark = time.perf_counter()
        self.first = run.batches  # global batches done when this process started
        self.last = run.batches
        self.snapshotted = run.batches  # where the latest checkpoint stands (run.batches: resumed there)
        # the latest validation accuracy, also across a resume (summaries report it)
        self.last_val: float | None = (run.metrics.get(self.task.best) or [[None, None]])[-1][1]
        self.said: set[str] = set()  # findings already logged (diagnosis.py): each is said once

    def metric(self, epoch: float, name: str, value: float, keep: bool = True) -> None:
        self.events.emit("metric", epoch=epoch, name=name, value=value)
        if keep:
            self.run.metrics.setdefault(name, []).append([epoch, value])

    def __call__(self, batches: int) -> None:
        """After every optimizer step: report, validate and snapshot when due; honour abort."""
        self.checkpoints.announce()
        point = self.run.schedule.at(batches)
        if point is not None:
            self.read_back(point)
            if (point.validate is not None and self.run.val_loader is not None) or point.snapshot is not None:
                transfer.refresh_batchnorm(self.run.net, self.run.batchnorm_refresh)  # what is validated or saved
            if point.validate is not None:
                self.validate(point.validate)
            if point.snapshot is not None:
                self.snapshot(point.snapshot, batches)
            if point.validate is not None or point.snapshot is not None:
                self.events.emit("summary", epoch=point.validate or point.snapshot,
                                 best=self.run.best, **{self.task.best: self.last_val},
                                 diagnosis=self.diagnosis())
                self.mark = time.perf_counter()  # images/s measures training only
        if self.should_stop():
            raise Aborted()

    def diagnosis(self) -> list[str]:
        """What the metrics so far say the training cannot do (diagnosis.py), each finding logged
        as a warning the first time; the summary keeps the current ones."""
        found = diagnose(self.run.metrics, len(self.run.classes), self.run.base_lr)
        for finding in found:
            if finding.rule not in self.said:
                self.events.log(finding.text, "warning")
                self.said.add(finding.rule)
        return [finding.text for finding in found]

    def read_back(self, point: Point) -> None:
        run, schedule = self.run, self.run.schedule
        epoch = schedule.epoch_of(point.batches)
        loss = self.meter.read()  # waits for the device: the only sync in the training loop
        now = time.perf_counter()
        if loss is not None and not math.isfinite(loss):
            raise TrainingError(f"training diverged at epoch {epoch:g} (loss is {loss}): lower the "
                                f"learning rate (now {run.base_lr:g})")
        if loss is not None:
            self.metric(epoch, "train_loss", loss)
            for name, value in self.meter.last_parts.items():
                self.metric(epoch, name, value)
        self.metric(epoch, "lr", run.stepper.lr)
        images = (point.batches - self.last) * run.global_batch
        self.metric(epoch, "images_per_second", round(images / max(now - self.mark, 1e-9), 1), keep=False)
        self.last, self.mark = point.batches, now
        done = point.batches // schedule.accumulation
        rate = (now - self.started) / max(point.batches - self.first, 1)  # seconds per batch
        eta = rate * (schedule.total_batches - point.batches)
        self.events.progress(done=done, total=schedule.total_iterations, phase="train", eta=round(eta, 1))

    def validate(self, epoch: float) -> None:
        run = self.run
        if run.val_loader is None:
            return
        distributed.sync_buffers(run.net, run.dist)  # rank 0's BatchNorm statistics: those it saves
        # `is None`, not `or`: a compiled module has no truth value (OptimizedModule raises on len()).
        model = run.model if run.eval_model is None else run.eval_model
        if run.stepper.ema is not None:  # the average validates: it is what the checkpoint saves
            model = run.stepper.ema.model
        result = self.task.evaluate(model, run.val_loader, run.stepper.autocast, self.should_stop, run.dist)
        if not math.isfinite(result["val_loss"]):
            raise TrainingError(f"training diverged at epoch {epoch:g} (validation loss is "
                                f"{result['val_loss']}): lower the learning rate (now {run.base_lr:g})")
        for name, value in result.items():
            self.metric(epoch, name, value)
        best = self.task.best
        self.last_val = result[best]
        if run.best is None or self.last_val > run.best[best]:
            run.best = {"epoch": epoch, best: self.last_val}

    def snapshot(self, epoch: float, batches: int) -> Path | None:
        """Rank 0 writes the checkpoint (with every rank's RNG state); the others wait for none.

        The write runs in the background (checkpoint_writer.py); its ``checkpoint`` event
        follows once the file is complete.
        """
        run = self.run
        rng = rng_state(run.seed, run.device if run.dist.enabled else None)
        if run.dist.enabled:
            rng["ranks"] = distributed.gather(rng, run.dist)  # every rank takes part
        if not run.dist.is_main:
            return None
        path = Path(run.job_dir) / CHECKPOINTS_DIR / checkpoint_name(epoch)
        self.checkpoints.submit(path, epoch, checkpoint_state(run, epoch, batches, rng))
        self.snapshotted = batches
        return path

    def restart_at(self, batches: int) -> None:
        """Speed and ETA count from ``batches`` in the run's new schedule (after a batch change)."""
        self.first = self.last = self.snapshotted = batches
        self.started = self.mark = time.perf_counter()

    def pause_if_resizing(self, batches: int) -> None:
        """At an epoch boundary: if the ranks agreed to stop for an elastic job's new size
        (distributed.StopAgreement), checkpoint here (unless just done) and stop (`Paused`)."""
        if not getattr(self.should_stop, "resizing", False) or batches >= self.run.schedule.total_batches:
            return
        epoch = self.run.schedule.epoch_of(batches)
        if self.snapshotted != batches:
            self.snapshot(epoch, batches)
        raise Paused(f"stopping at epoch {epoch:g}, from its checkpoint, to continue on another "
                     "number of workers (elastic)")


def train(spec: ModelSpec, job_dir: str | os.PathLike, events: EventWriter, *,
          resume: Path | dict | None = None, should_stop: Callable[[], bool] = lambda: False,
          d: Dist = SINGLE, on_prepared: Callable[[], None] | None = None) -> dict:
    """Run a model job to its end; return its result (final epoch, best, last val accuracy).

    ``resume`` is a checkpoint of this job to continue from (a path, or the loaded dict). Raises
    TrainingError with a message for the user, or Aborted when ``should_stop()`` turned true
    (with several ranks, a `distributed.StopAgreement`, so that all stop at the same step).
    ``on_prepared`` is called once the run is built, before the first batch.
    """
    run = prepare(spec, Path(job_dir), events, resume, d)
    if on_prepared is not None:
        on_prepared()
    _log_start(run, resume)
    schedule = run.schedule
    events.progress(done=run.batches // schedule.accumulation, total=schedule.total_iterations, phase="train")
    log = EpochLog(run)
    reporter = Reporter(run, should_stop)
    try:
        _train_batches(run, reporter, log.epoch)
    except torch.OutOfMemoryError:  # outside a step (validation, a checkpoint): not retried
        raise TrainingError(f"out of memory at batch size {run.train_loader.batch_size} outside a training "
                            "step; try a smaller batch size") from None
    finally:
        # The last checkpoint is complete (and announced) before the job reports done or aborted.
        reporter.checkpoints.wait()
    if run.device.type == "cuda":  # bench/cluster/scaling.py reports it; people size batches by it
        events.emit("gpu_memory", peak_allocated=torch.cuda.max_memory_allocated(run.device),
                    peak_reserved=torch.cuda.max_memory_reserved(run.device))
    final = run.schedule.snapshot_epochs[-1]
    best = reporter.task.best
    last = run.metrics.get(best, [[None, None]])[-1][1]
    result = {"epoch": final, "best": run.best, best: last}
    events.emit("result", **result)
    log.done(result)
    return result


def _train_batches(run: Run, reporter: Reporter, after_epoch: Callable[[float], None]) -> None:
    """Train from the run's position (``run.batches``) to the end of the schedule; out of memory
    halves the batch and goes on from the last complete step (oom_retry.py)."""
    guard = oom_retry.StepGuard(run)
    batches = done = run.batches
    run.stepper.optimizer.zero_grad(set_to_none=True)

    def after_step(step_batches: int) -> None:
        nonlocal done
        done = step_batches
        guard.after_step(step_batches)
        reporter(step_batches)

    while batches < run.schedule.total_batches:
        schedule = run.schedule
        per_epoch = schedule.batches_per_epoch
        epoch, start = divmod(batches, per_epoch)
        stop = min(per_epoch, schedule.total_batches - epoch * per_epoch)
        try:
            train_one_epoch(run.model, run.train_loader, run.stepper, reporter.meter, epoch, start=start,
                            stop=stop, after_step=after_step, step_loss=partial(guard.loss, reporter.task.step_loss))
        except torch.OutOfMemoryError:
            batches = done = oom_retry.halve(run, done)
            reporter.restart_at(batches)
            continue
        batches = epoch * per_epoch + stop
        after_epoch(schedule.epoch_of(batches))
        reporter.pause_if_resizing(batches)


def _log_start(run: Run, resume: Path | dict | None) -> None:
    spec, loader = run.spec, run.train_loader
    params = sum(p.numel() for p in run.net.parameters())
    dtype = run.stepper.dtype
    precision = "fp32" if dtype is None else {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    d = run.dist
    where = f"{run.device}" if not d.enabled else (
        f"{d.world_size} process{'es' * (d.world_size > 1)} ({d.backend}, DDP), rank 0 on {run.device}")
    batch = f"{loader.batch_size}" if d.world_size == 1 else (
        f"{run.global_batch} ({d.world_size} x {loader.batch_size} per process)")
    run.events.log(
        f"training {spec.network or 'custom network'} ({params:,} parameters) on {where} "
        f"({precision}); {len(loader.reader)} training images in {len(loader)} batches of "
        f"{batch}, {run.schedule.total_iterations} iterations, base LR {run.base_lr:g}, seed {run.seed}")
    if loader.dropped_per_epoch:  # said, not silent: a different handful of images each epoch
        run.events.log(f"each epoch leaves out {loader.dropped_per_epoch * d.world_size} of its "
                       f"{loader.images_per_epoch * d.world_size} images (the last, incomplete batch)")
    layout = "channels_last" if loader.channels_last else "NCHW"
    run.events.log(f"memory layout {layout}, torch.compile {'on' if spec.compile else 'off'}, "
                   f"{threads_note(torch.get_num_threads())}")
    if resume is not None:
        # a multi-process job hands every rank rank 0's checkpoint already loaded: no file name
        source = Path(resume).name if isinstance(resume, (str, os.PathLike)) else "the latest checkpoint"
        run.events.log(f"resuming from {source} at epoch "
                       f"{run.schedule.epoch_of(run.batches):g}")
