"""A run's network with its starting weights: a checkpoint's (on resume), a weights store
entry's backbone, a pretrained file's, or fresh from the seed; its backbone frozen as asked.
build_run.py calls `build_network` once per run."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from trainyard.artifact import network
from trainyard.core.events import EventWriter
from trainyard.core.tasks import task_traits
from trainyard.networks.detection import fit_input
from trainyard.networks.state_dicts import read_state_dict
from trainyard.training.ema import load_weights
from trainyard.training.spec import ModelSpec
from trainyard.training.state import TrainingError
from trainyard.weights import fit


def build_network(spec: ModelSpec, ckpt: dict | None, num_classes: int, channels: int, image_size: int,
                   input_size: tuple[int, int], events: EventWriter
                   ) -> tuple[nn.Module, list[str] | None, list[str] | None]:
    """(network with its starting weights, trainable names or None, head names or None):
    from a checkpoint, pretrained weights or fresh, frozen as asked."""
    net = network.create_model(spec.network, spec.network_source, num_classes, channels, image_size, input_size)
    if task_traits(spec.task).boxes:
        fit_input(net, *input_size)  # the dataset's stored size, not torchvision's 800 or 320
    if ckpt:
        load_weights(net, ckpt)  # the trained weights, not their average (ema.py)
        trainable, head = ckpt["trainable"], ckpt.get("head")
    elif spec.pretrained_entry:
        trainable, head = _load_store_weights(spec, net, image_size, events)
    else:
        trainable, head = _load_pretrained(spec, net, num_classes, events)
    if trainable is not None:
        network.freeze_except(net, trainable)
    return net, trainable, head


def _load_store_weights(spec: ModelSpec, net: nn.Module, image_size: int, events: EventWriter):
    """Store weights: the whole backbone must fit; the classifier starts fresh for our classes."""
    assert spec.pretrained and spec.network  # the spec checks pretrained_entry comes with both
    try:
        if task_traits(spec.task).boxes:  # the backbone network's weights; neck and heads fresh
            head = fit.load_detector_backbone(net, read_state_dict(spec.pretrained), spec.network)
        else:
            head = fit.load_backbone(net, read_state_dict(spec.pretrained), spec.network, image_size)
    except ValueError as e:  # weights that are not, or do not fit: the job's one-line error
        raise TrainingError(str(e)) from None
    fresh = (f"new neck and heads ({len(head)} tensors)" if task_traits(spec.task).boxes
             else f"new classifier {', '.join(head)}")
    events.log(f"pretrained: the backbone of {spec.pretrained_entry}; {fresh}")
    params = {name for name, _ in net.named_parameters()}
    trainable = [name for name in head if name in params] if spec.freeze_backbone else None
    if trainable is not None:
        events.log(f"freeze_backbone: training only {', '.join(trainable)}")
    return trainable, head


def _load_pretrained(spec: ModelSpec, net: nn.Module, num_classes: int, events: EventWriter):
    """Start from pretrained weights; return (trainable names if the backbone is frozen, head)."""
    if not spec.pretrained:
        return None, None
    try:
        report = network.load_pretrained(net, spec.pretrained)
    except network.PretrainedError as e:
        raise TrainingError(str(e)) from None
    events.log(f"pretrained: loaded {len(report.loaded)} tensors from {Path(spec.pretrained).name}")
    if report.mismatched:
        events.log("pretrained: re-initialised (shape differs, e.g. another class count): "
                   + ", ".join(report.mismatched), "warning")
    if report.missing:
        events.log("pretrained: not in the file, freshly initialised: " + ", ".join(report.missing), "warning")
    head = network.trainable_after_finetune(net, report, num_classes)
    if not spec.freeze_backbone:
        return None, head
    events.log(f"freeze_backbone: training only {', '.join(head) or 'nothing'}")
    return head, head
