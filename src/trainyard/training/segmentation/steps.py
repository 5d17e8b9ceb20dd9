"""A segmenter's training step and its validation: per-pixel cross-entropy (+ Dice), mean IoU.

The loss is cross-entropy over the labelled pixels (255 = ignore) plus the soft Dice loss of
the classes present, which keeps small classes from drowning in the background. Validation sums
a confusion matrix over the whole split (every rank's shard, added up), from which come the mean
IoU over the classes that occur or are predicted (``val_miou``, the "best" metric), the mean IoU
without class 0 (background), and the pixel accuracy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from trainyard.artifact.segmentation_metrics import IGNORE, iou_figures
from trainyard.core.jobproc import Aborted
from trainyard.training import distributed
from trainyard.training.distributed import SINGLE, Dist

DICE_WEIGHT = 1.0


def dice_loss(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """1 - the soft Dice coefficient, averaged over the classes present in ``masks``."""
    valid = (masks != IGNORE).unsqueeze(1)
    probs = logits.float().softmax(1) * valid
    target = F.one_hot(masks.clamp(max=logits.shape[1] - 1) * (masks != IGNORE), logits.shape[1])
    target = target.permute(0, 3, 1, 2).float() * valid
    inter = (probs * target).sum((0, 2, 3))
    total = probs.sum((0, 2, 3)) + target.sum((0, 2, 3))
    present = target.sum((0, 2, 3)) > 0
    dice = (2 * inter + 1) / (total + 1)
    return (1 - dice[present]).mean() if present.any() else logits.sum() * 0


def segmentation_loss(model: nn.Module, images: torch.Tensor, masks: torch.Tensor
                      ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(cross-entropy + Dice, each part by its metric name) of one training batch."""
    logits = model(images)
    ce = F.cross_entropy(logits.float(), masks, ignore_index=IGNORE)
    dice = dice_loss(logits, masks)
    return ce + DICE_WEIGHT * dice, {"train_ce_loss": ce.detach(), "train_dice_loss": dice.detach()}


def confusion(logits: torch.Tensor, masks: torch.Tensor, classes: int) -> torch.Tensor:
    """(classes, classes) int64 counts of (true, predicted) over the labelled pixels."""
    keep = masks != IGNORE
    pairs = masks[keep] * classes + logits.argmax(1)[keep]
    return torch.bincount(pairs, minlength=classes * classes).reshape(classes, classes)


def evaluate_segmentation(model: nn.Module, loader,
                          autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                          should_stop: Callable[[], bool] = lambda: False, d: Dist = SINGLE) -> dict[str, float]:
    """val_miou, val_miou_no_background, val_pixel_accuracy (0..1) and val_loss over the split."""
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), device=loader.device)
    matrix: torch.Tensor | None = None
    count = 0
    with torch.inference_mode():
        for index, (images, masks) in enumerate(loader.batches()):
            if index < loader.common_batches and should_stop():
                raise Aborted()
            with autocast():
                logits = model(images).float()
            loss_sum += F.cross_entropy(logits, masks, ignore_index=IGNORE) * len(images)
            found = confusion(logits, masks, logits.shape[1])
            matrix = found if matrix is None else matrix + found
            count += len(images)
    model.train(was_training)
    total = distributed.all_reduce_sum(torch.stack([loss_sum, torch.tensor(float(count), device=loss_sum.device)]), d)
    matrix = distributed.all_reduce_sum(matrix.double(), d) if matrix is not None else torch.zeros(1, 1)
    figures = iou_figures(matrix.cpu().numpy())
    loss, images = total.tolist()
    return {"val_loss": loss / max(images, 1), "val_miou": figures.miou,
            "val_miou_no_background": figures.miou_no_background, "val_pixel_accuracy": figures.pixel_accuracy}
