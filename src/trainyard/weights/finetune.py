"""Fine-tuning from store weights: which entry ``--pretrained`` means, the input normalisation
the weights expect, and the optimizer's parameter groups (a lower LR for the backbone).

``--pretrained imagenet`` is the network's published default entry (``resnet18.imagenet``,
``timm:resnet10t.imagenet``); any other store name is taken as it is. The entry must be for the
job's network and its file present, or the job is refused before it is queued. A detector takes
its backbone network's entries (``resnet50.imagenet`` for Faster R-CNN ResNet-50).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainyard.core.errors import InvalidInput
from trainyard.weights import catalogue
from trainyard.weights.store import WeightsStore

if TYPE_CHECKING:  # the CLI resolves --pretrained with this module and must not load torch
    from torch import nn


def is_store_name(store: WeightsStore, value: str) -> bool:
    """Whether ``value`` names store weights (rather than a job or a file)."""
    if value == catalogue.IMAGENET_TAG:
        return True
    return catalogue.find_entry(value) is not None or store.record(value) is not None


def resolve_for_network(store: WeightsStore, value: str, network: str | None) -> dict:
    """``{entry, path, mean, std}`` of the store weights ``value`` names, for ``network``. For a
    detector: its backbone network's weights (``imagenet``: that network's default entry), and no
    mean or std (torchvision's detectors normalise their input inside)."""
    from trainyard.networks.table import detector_of

    if network is None:
        raise InvalidInput("pretrained store weights need a standard or timm network (--network), "
                           "not a custom network file")
    detector = detector_of(network)
    if detector is not None and detector.backbone_unfit:
        raise InvalidInput(f"ImageNet weights cannot start {network}: {detector.backbone_unfit}")
    wanted = detector.backbone if detector else network
    name = catalogue.default_entry_name(wanted) if value == catalogue.IMAGENET_TAG else value
    record = store.resolve(name)
    if record["network"] != wanted:
        raise InvalidInput(f"the weights {record['name']} are for network {record['network']}, not {network}"
                           + (f" (whose backbone is {wanted})" if detector else ""))
    path, record = store.weights_path(name)
    if detector:
        return {"entry": record["name"], "path": str(path), "mean": None, "std": None}
    return {"entry": record["name"], "path": str(path), "mean": _floats(record.get("mean")),
            "std": _floats(record.get("std"))}


def _floats(values) -> list[float] | None:
    return [float(v) for v in values] if values else None


def channel_normalisation(mean: list[float], std: list[float], channels: int) -> tuple[list[float], list[float]]:
    """The weights' per-channel mean and std for a dataset of ``channels`` channels: a grey
    image gets their average (the first convolution sums its RGB weights, fit.adapt_channels)."""
    if channels == len(mean):
        return list(mean), list(std)
    if channels == 1:
        return [sum(mean) / len(mean)], [sum(std) / len(std)]
    return [mean[i % len(mean)] for i in range(channels)], [std[i % len(std)] for i in range(channels)]


def parameter_groups(model: nn.Module, head: list[str], base_lr: float, backbone_multiplier: float) -> list[dict]:
    """Trainable parameters in two optimizer groups: the head at ``base_lr`` and the backbone at
    ``base_lr * backbone_multiplier``."""
    heads: list[nn.Parameter] = []
    backbone: list[nn.Parameter] = []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (heads if name in set(head) else backbone).append(param)
    groups = [{"params": heads, "lr": base_lr}]
    if backbone:
        groups.append({"params": backbone, "lr": base_lr * backbone_multiplier})
    return [g for g in groups if g["params"]]
