"""One detector's training step and its validation: the summed losses, COCO mAP on a split.

Torchvision's detectors return a dict of losses in training mode (Faster R-CNN four, RetinaNet
and SSDlite two, FCOS three) and boxes in eval mode. Training sums the losses (as torchvision's
reference script does) and reports each one too (``train_<name>_loss``). Validation runs each
batch twice: in eval mode for the boxes, scored by COCO mAP (artifact/detection_metrics.py), and
in training mode with BatchNorm kept in eval and no gradient, for the validation loss (a
detector computes its losses only in training mode; its BatchNorm statistics must not learn
from validation images). The second pass reuses what the first computed of the parts the two
share, the backbone and the head (Faster R-CNN: the RPN's head), as shared_parts.py explains.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import nn

from trainyard.artifact.detection_metrics import mean_average_precision
from trainyard.core.jobproc import Aborted
from trainyard.networks.detection import label_offset
from trainyard.networks.loss import is_compiled, unwrap_model
from trainyard.training import distributed
from trainyard.training.detection.data import DetectionBatchLoader, Targets
from trainyard.training.detection.shared_parts import computed_once, shared_parts
from trainyard.training.distributed import SINGLE, Dist


def loss_name(name: str) -> str:
    """The metric of one of a detector's losses: loss_classifier -> train_classifier_loss."""
    return f"train_{name.removeprefix('loss_')}_loss"


def detection_loss(model: nn.Module, images: torch.Tensor, targets: Targets
                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(the summed loss, each loss by its metric name) of one training batch."""
    losses: dict[str, torch.Tensor] = model(images, targets)
    return torch.stack(list(losses.values())).sum(), {loss_name(k): v for k, v in losses.items()}


def evaluate_detection(model: nn.Module, loader: DetectionBatchLoader,
                       autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                       should_stop: Callable[[], bool] = lambda: False, d: Dist = SINGLE) -> dict[str, float]:
    """val_map50, val_map (0..1) and val_loss over the whole split (every rank's shard)."""
    was_training = model.training
    offset = label_offset(unwrap_model(model))
    # compiled, the model's parts are traced as they are: they are not wrapped to remember.
    # Under DDP (not compiled) the wrapper calls the user's module, whose parts remember.
    shared = [] if is_compiled(model) else shared_parts(unwrap_model(model))
    predictions, truth = [], []
    loss_sum = torch.zeros((), device=loader.device)
    count = 0
    with torch.no_grad(), computed_once(shared):
        for index, (images, targets) in enumerate(loader.batches()):
            if index < loader.common_batches and should_stop():
                raise Aborted()
            with autocast():
                model.eval()
                found = model(images)
                _loss_mode(model, shared)
                loss_sum += sum(model(images, targets).values()).float() * len(images)
            count += len(images)
            predictions += [_to_host(f, offset) for f in found]
            truth += [_to_host(t, offset) for t in targets]
    model.train(was_training)
    total = distributed.all_reduce_sum(torch.stack([loss_sum, torch.tensor(float(count), device=loss_sum.device)]), d)
    # COCO breaks ties between equal scores by image order: put every rank's images back in
    # the split's order, so any number of processes gives the figures of one process.
    mine = list(zip(loader.order(0).tolist(), predictions, truth))
    every = distributed.gather(mine, d)
    result = None
    if d.is_main:  # one computes COCO's figures for all, over every rank's images
        ordered = sorted((row for rank_rows in every for row in rank_rows), key=lambda row: row[0])
        result = mean_average_precision([p for _, p, _ in ordered], [t for _, _, t in ordered])
    result = distributed.broadcast(result, d)
    loss, images = total.tolist()
    return {"val_loss": loss / max(images, 1), "val_map50": result["map50"], "val_map": result["map"]}


def _loss_mode(model: nn.Module, shared: list[nn.Module]) -> None:
    """Training mode for the losses, with BatchNorm and the shared parts kept as they were for the boxes."""
    model.train()
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.eval()
    for part in shared:
        part.eval()


def _to_host(doc: dict[str, torch.Tensor], offset: int) -> dict:
    out = {k: v.detach().float().cpu().numpy() if k != "labels" else (v.cpu() - offset).numpy()
           for k, v in doc.items() if k in ("boxes", "scores", "labels")}
    return out
