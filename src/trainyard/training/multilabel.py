"""What a multi-label classifier puts into the training loop (steps.py's TASKS "multilabel").

The network is any classifier: its head gives one logit a label (the dataset's labels.txt). The
loss is binary cross-entropy on the sigmoid of each logit, with ``pos_weight`` = negatives /
positives of each label in the training split (at least 1, at most ``MAX_POS_WEIGHT``), so a
rare label's few positives count as much as its many negatives. Validation gathers the whole
split's scores, tunes a threshold per label (artifact/multilabel_metrics.py) and reports mAP and
F1 micro and macro at those thresholds; the thresholds go into the run's ``task_state``, which
each checkpoint saves (``thresholds``), so inference answers each label over its own threshold.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from trainyard.artifact.multilabel_metrics import multilabel_metrics, tune_thresholds
from trainyard.core.jobproc import Aborted
from trainyard.networks.loss import aux_loss_weights, main_output
from trainyard.training import distributed
from trainyard.training.data import BatchLoader
from trainyard.training.distributed import SINGLE, Dist

MAX_POS_WEIGHT = 50.0  # a label seen once in 10,000 images must not swamp every other label


def multilabel_loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor,
                    pos_weight: torch.Tensor | None = None) -> tuple[torch.Tensor, None]:
    """(the batch's BCE-with-logits, no parts), any auxiliary outputs' weighted in as for a classifier."""
    outputs = model(images)
    targets = labels.float()
    main, *aux = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    loss = F.binary_cross_entropy_with_logits(main.float(), targets, pos_weight=pos_weight)
    for weight, logits in zip(aux_loss_weights(model, len(aux)), aux):
        if logits is not None:  # a head that did not run this step
            loss = loss + weight * F.binary_cross_entropy_with_logits(logits.float(), targets, pos_weight=pos_weight)
    return loss, None


def pos_weights(targets: np.ndarray) -> np.ndarray:
    """(L,) float32: negatives / positives of each label, clipped to 1..MAX_POS_WEIGHT."""
    targets = np.asarray(targets, np.float64)
    positives = targets.sum(axis=0)
    return np.clip((len(targets) - positives) / np.maximum(positives, 1), 1.0, MAX_POS_WEIGHT).astype(np.float32)


def evaluate_multilabel(model: nn.Module, loader: BatchLoader,
                        autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                        should_stop: Callable[[], bool] = lambda: False, d: Dist = SINGLE,
                        keep: dict | None = None) -> dict[str, float]:
    """Loss, micro and macro F1 and mAP over the whole split (every rank's shard gathered); the
    tuned thresholds into ``keep["thresholds"]`` when given."""
    was_training = model.training
    model.eval()
    scores, targets = [], []
    loss_sum = torch.zeros((), device=loader.device)
    with torch.inference_mode():
        for index, (images, labels) in enumerate(loader.batches()):
            if index < loader.common_batches and should_stop():  # ranks ask equally often
                raise Aborted()
            with autocast():
                logits = main_output(model(images))
            logits = logits.float()
            loss_sum += F.binary_cross_entropy_with_logits(logits, labels.float(), reduction="sum")
            scores.append(torch.sigmoid(logits).cpu())
            targets.append(labels.cpu())
    model.train(was_training)
    empty = torch.zeros(0, np.asarray(loader.reader.labels).shape[-1])  # a rank's shard may be empty
    mine = (torch.cat(scores) if scores else empty, torch.cat(targets) if targets else empty)
    every = distributed.gather(mine, d)
    all_scores, all_targets = torch.cat([s for s, _ in every]), torch.cat([t for _, t in every])
    loss = float(distributed.all_reduce_sum(loss_sum, d)) / max(all_targets.numel(), 1)
    thresholds = tune_thresholds(all_scores, all_targets)
    figures = multilabel_metrics(all_scores, all_targets, thresholds)
    if keep is not None:
        keep["thresholds"] = [round(float(t), 4) for t in thresholds]
    return {"val_loss": loss, "val_micro_f1": figures["micro_f1"], "val_macro_f1": figures["macro_f1"],
            "val_map": figures["map"]}


def bind(run: Any) -> tuple[Callable[..., tuple[torch.Tensor, None]], Callable[..., dict[str, float]]]:
    """(the step's loss, the validation) of ``run``: weighted by its training split's labels,
    keeping the thresholds in its ``task_state`` for the checkpoints."""
    weights = pos_weights(run.train_loader.reader.labels)
    rare = sorted(zip(weights.tolist(), run.classes), reverse=True)[:5]
    if rare and rare[0][0] > 1:
        run.events.log("rare labels weighted (pos_weight): "
                       + ", ".join(f"{name} x{w:.1f}" for w, name in rare if w > 1))
    pos_weight = torch.as_tensor(weights, device=run.device)
    return partial(multilabel_loss, pos_weight=pos_weight), partial(evaluate_multilabel, keep=run.task_state)
