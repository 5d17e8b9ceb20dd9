"""What a task puts into the training loop: the step's loss, validation and the "best" metric.

Classification's cross-entropy and its validation (loss, top-1 and top-5 accuracy) are here;
detection's (summed detector losses, COCO mAP) are in training/detection/steps.py; `TASKS`
names both for the loop (loop.py), by the model spec's ``task``. `LossMeter` sums a step's
loss, and a detector's separate losses, on the device between read-backs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainyard.core.jobproc import Aborted
from trainyard.core.vocabulary import BEST_METRIC
from trainyard.networks import main_output, training_loss
from trainyard.training import distributed
from trainyard.training.data import BatchLoader
from trainyard.training.detection.steps import detection_loss, evaluate_detection
from trainyard.training.distributed import SINGLE, Dist
from trainyard.training.multilabel import bind as bind_multilabel
from trainyard.training.multilabel import evaluate_multilabel, multilabel_loss
from trainyard.training.segmentation.steps import evaluate_segmentation, segmentation_loss

# step_loss(model, images, labels) -> (loss, {metric name: loss part} or None)
# (labels: a classifier's class tensor, a detector's target dicts)
StepLoss = Callable[..., tuple[torch.Tensor, dict[str, torch.Tensor] | None]]


class LossMeter:
    """Sums per-batch losses on the device; `read` is the only host synchronisation.

    With several ranks, `read` averages over all of them (every rank must call it together).
    """

    def __init__(self, device: torch.device, d: Dist = SINGLE):
        self.total = torch.zeros((), device=device)
        self.count = 0
        self.dist = d
        self.parts: dict[str, torch.Tensor] = {}  # a detector's losses, each summed alike
        self.last_parts: dict[str, float] = {}  # their means at the last read

    def add(self, loss: torch.Tensor, parts: dict[str, torch.Tensor] | None = None) -> None:
        self.total += loss.detach().float()
        self.count += 1
        for name, value in (parts or {}).items():
            self.parts[name] = self.parts.get(name, 0) + value.detach().float()

    def read(self) -> float | None:
        """The mean loss since the last read (None if there was no batch), and reset; the mean
        of each part in ``last_parts``."""
        if not self.count:
            return None
        names = sorted(self.parts)  # every rank has the same losses, so the same order
        stacked = torch.stack([self.total, *(torch.as_tensor(self.parts[n], device=self.total.device)
                                             for n in names)])
        sums: list[float] = distributed.all_reduce_sum(stacked, self.dist).tolist()  # ranks count alike
        scale = self.count * self.dist.world_size
        self.last_parts = {name: value / scale for name, value in zip(names, sums[1:])}
        self.total.zero_()
        self.parts = {}
        self.count = 0
        return sums[0] / scale


def classification_loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor
                        ) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]:
    """(the batch's loss, no parts): cross-entropy, with any auxiliary outputs' weighted in."""
    return training_loss(model(images), labels, model), None


def evaluate(model: nn.Module, loader: BatchLoader,
             autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
             should_stop: Callable[[], bool] = lambda: False, d: Dist = SINGLE) -> dict[str, float]:
    """Loss, top-1 and top-5 accuracy (percent) over a whole split; one host sync at the end.

    ``autocast`` makes the mixed-precision context (e.g. ``Stepper.autocast``); fp32 by default.
    With several ranks each evaluates its shard (``loader``'s rank) and the sums are added up,
    so the figures are over the whole split; ``model`` must not be DDP-wrapped (its forward
    would wait for the other ranks, and shards may differ by a batch).
    """
    was_training = model.training
    model.eval()
    device = loader.device
    loss_sum, top1, top5 = (torch.zeros((), device=device) for _ in range(3))
    count = 0
    with torch.inference_mode():
        for index, (images, labels) in enumerate(loader.batches()):
            # Only on batches every rank has: ranks must ask a StopAgreement equally often.
            if index < loader.common_batches and should_stop():
                raise Aborted()
            with autocast():
                logits = main_output(model(images))
            logits = logits.float()
            loss_sum += F.cross_entropy(logits, labels, reduction="sum")
            k = min(5, logits.shape[1])
            hits = logits.topk(k, dim=1).indices == labels[:, None]  # (N, k)
            top1 += hits[:, 0].sum()
            top5 += hits.any(dim=1).sum()
            count += len(labels)
    model.train(was_training)
    sums = torch.stack([loss_sum, top1.float(), top5.float(), torch.tensor(float(count), device=device)])
    loss, correct1, correct5, count = distributed.all_reduce_sum(sums, d).tolist()
    count = max(count, 1)
    return {"val_loss": loss / count, "val_accuracy": 100.0 * correct1 / count,
            "val_top5": 100.0 * correct5 / count}


@dataclass(frozen=True)
class TaskSteps:
    """What a task changes in the loop: the step's loss, validation, and the metric of "best"."""

    step_loss: StepLoss
    evaluate: Callable[..., dict[str, float]]  # evaluate(model, loader, autocast, should_stop, d)
    best: str  # the validation metric that picks the best epoch (higher is better)
    # (step loss, evaluate) made for one run from its data (a multi-label loss's pos_weight); None: as above
    bind: Callable[[Any], tuple[StepLoss, Callable[..., dict[str, float]]]] | None = None

    def for_run(self, run: Any) -> TaskSteps:
        """These steps as ``run`` uses them (bound to its data where the task binds)."""
        if self.bind is None:
            return self
        step_loss, evaluate = self.bind(run)
        return replace(self, step_loss=step_loss, evaluate=evaluate, bind=None)


# Each task's best metric is its core/vocabulary.BEST_METRIC entry, the one the pages rank by.
TASKS = {"classification": TaskSteps(classification_loss, evaluate, BEST_METRIC["classification"]),
         "detection": TaskSteps(detection_loss, evaluate_detection, BEST_METRIC["detection"]),
         "multilabel": TaskSteps(multilabel_loss, evaluate_multilabel, BEST_METRIC["multilabel"],
                                 bind=bind_multilabel),
         "segmentation": TaskSteps(segmentation_loss, evaluate_segmentation, BEST_METRIC["segmentation"])}


