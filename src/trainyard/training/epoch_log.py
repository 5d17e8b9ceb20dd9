"""The training log for people: one line per epoch and a final line.

events.jsonl carries every figure for charts; log.txt (and the job page's log) would otherwise
hold one line for a whole run. Each line gives what a person scans for: loss, accuracy, the
learning rate, the speed and how long the epoch took.

    epoch 3/30: train loss 0.4123, val loss 0.3876, val accuracy 88.50 %, LR 0.01, 1,234 images/s, 2.4 s

(a detector's line gives its validation mAP@0.5 and mAP@0.5:0.95 instead of the accuracy)
"""

from __future__ import annotations

import time

from trainyard.core.formatting import duration
from trainyard.core.tasks import best_of


class EpochLog:
    def __init__(self, run):
        self.run = run
        self.started = self.mark = time.perf_counter()
        self.last_epoch = run.schedule.epoch_of(run.batches)  # where this process started

    def epoch(self, epoch: float) -> None:
        """Log the epoch that just ended (``epoch`` may be fractional at the end of training)."""
        run, now = self.run, time.perf_counter()
        seconds = max(now - self.mark, 1e-9)
        images = (epoch - self.last_epoch) * run.schedule.batches_per_epoch * run.global_batch
        parts = [f"epoch {epoch:g}/{run.schedule.epochs:g}:"]
        loss = _latest(run.metrics, "train_loss")
        if loss is not None:
            parts.append(f"train loss {loss:.4f},")
        val_loss, val_accuracy = (_latest(run.metrics, name, epoch) for name in ("val_loss", "val_accuracy"))
        if val_loss is not None:
            parts.append(f"val loss {val_loss:.4f},")
        if val_accuracy is not None:
            parts.append(f"val accuracy {val_accuracy:.2f} %,")
        micro_f1 = _latest(run.metrics, "val_micro_f1", epoch)  # a multi-label classifier's
        if micro_f1 is not None:
            parts.append(f"val micro F1 {micro_f1:.3f},")
        map50, map_ = (_latest(run.metrics, name, epoch) for name in ("val_map50", "val_map"))
        if map50 is not None and map_ is not None:
            parts.append(f"val mAP@0.5 {map50:.3f}, mAP@0.5:0.95 {map_:.3f},")
        miou = _latest(run.metrics, "val_miou", epoch)
        if miou is not None:
            parts.append(f"val mIoU {miou:.3f},")
        parts.append(f"LR {run.stepper.lr:.3g}, {images / seconds:,.0f} images/s, {seconds:.1f} s")
        run.events.log(" ".join(parts))
        self.mark, self.last_epoch = now, epoch

    def done(self, result: dict) -> None:
        best = result.get("best") or {}
        text = f"finished {result['epoch']:g} epochs in {duration(time.perf_counter() - self.started)}"
        found = best_of(best)
        if found:
            text += f"; best validation {found[0].best_words.format(found[1])} at epoch {best['epoch']:g}"
        self.run.events.log(text)


def _latest(metrics: dict, name: str, epoch: float | None = None) -> float | None:
    """The newest value of a metric (only if it was measured at ``epoch``, when given)."""
    points = metrics.get(name) or []
    if not points or (epoch is not None and abs(points[-1][0] - epoch) > 1e-6):
        return None
    return points[-1][1]
