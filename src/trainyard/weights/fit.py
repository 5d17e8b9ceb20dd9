"""Do these weights suit this network? And loading them for fine-tuning.

Weights files are read by networks/state_dicts.py (safetensors, or ``torch.load`` with
``weights_only=True``). A network's
classifier ("head") is found by building it on the meta device with an odd class count and
taking the tensors whose first dimension is that count: this works for any standard, timm or
custom network, auxiliary classifiers included. Every other tensor (the backbone) must be in the
weights with the same shape, or the weights belong to another architecture. Fine-tuning copies
the backbone, adapts the first convolution to the dataset's channels and leaves the head fresh
for the dataset's classes.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import nn

from trainyard.core.errors import InvalidInput
from trainyard.networks import create_network

_PROBE_CLASSES = 7919  # a prime no backbone width equals: marks the classifier's tensors
_IGNORED = ("num_batches_tracked",)  # older torchvision files lack these BatchNorm counters


class WeightsMismatch(InvalidInput):
    """Weights that belong to another architecture."""


@lru_cache(maxsize=16)
def network_layout(network: str, image_size: int) -> tuple[dict[str, tuple], frozenset[str]]:
    """(name -> shape of every tensor, names of the classifier's tensors) for a 3-channel build."""
    with torch.device("meta"):
        model = create_network(network, _PROBE_CLASSES, 3, image_size)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items() if not k.endswith(_IGNORED)}
    head = frozenset(k for k, s in shapes.items() if s and s[0] == _PROBE_CLASSES)
    return shapes, head


def check_fits(state: dict[str, torch.Tensor], network: str, image_size: int, what: str) -> int:
    """Raise WeightsMismatch unless ``state`` holds ``network``'s backbone; return its class count."""
    shapes, head = network_layout(network, image_size)
    wrong = [k for k, shape in shapes.items()
             if k not in head and (k not in state or not _same_but_channels(tuple(state[k].shape), shape))]
    if wrong:
        first = wrong[0]
        found = tuple(state[first].shape) if first in state else "missing"
        raise WeightsMismatch(
            f"{what} does not fit network {network}: {len(wrong)} of {len(shapes) - len(head)} "
            f"backbone tensors are missing or shaped differently (first: {first}, expected "
            f"{list(shapes[first])}, found {found}); were they made for another architecture?")
    heads = [state[k].shape[0] for k in head if k in state and state[k].ndim]
    return int(heads[0]) if heads else 0


def network_tensors(names, network: str, image_size: int) -> tuple[list[str], list[str]]:
    """(the names among ``names`` that are ``network``'s tensors, the others): an import keeps
    only the first, so a file cannot smuggle anything else into the store."""
    shapes, _ = network_layout(network, image_size)

    def ours(name: str) -> bool:
        if name.endswith(_IGNORED):  # a BatchNorm counter: the network's when its layer is
            return name.rpartition(".")[0] + ".running_mean" in shapes
        return name in shapes

    names = list(names)
    return [n for n in names if ours(n)], [n for n in names if not ours(n)]


def _same_but_channels(found: tuple, expected: tuple) -> bool:
    # A first convolution trained on grey images fits an RGB build, and back (adapt_channels).
    if len(found) == 4 == len(expected):
        return found[0] == expected[0] and found[2:] == expected[2:]
    return found == expected


def adapt_channels(weight: torch.Tensor, channels: int) -> torch.Tensor:
    """A first-convolution weight (out, 3, kh, kw) for ``channels`` inputs, as timm does: summed
    for one channel, tiled and rescaled for more, so the response to a grey image is unchanged."""
    if channels == 1:
        return weight.sum(dim=1, keepdim=True)
    repeat = math.ceil(channels / weight.shape[1])
    return weight.repeat(1, repeat, 1, 1)[:, :channels] * (weight.shape[1] / channels)


def load_backbone(model: nn.Module, state: dict[str, torch.Tensor], network: str, image_size: int) -> list[str]:
    """Copy every backbone tensor of ``state`` into ``model``; return the head's parameter names
    (left freshly initialised for the dataset's classes)."""
    _, head = network_layout(network, image_size)
    target = model.state_dict()
    matched = {}
    for name, tensor in target.items():
        if name in head or name not in state:
            continue
        source = state[name]
        if source.shape != tensor.shape and source.ndim == 4 and source.shape[0] == tensor.shape[0]:
            source = adapt_channels(source, tensor.shape[1])  # the dataset's channel count
        if source.shape != tensor.shape:
            raise WeightsMismatch(f"the weights do not fit network {network} at {name}: "
                                  f"{list(source.shape)} against {list(tensor.shape)}")
        matched[name] = source
    model.load_state_dict(matched, strict=False)
    return sorted(head)


def load_detector_backbone(model: nn.Module, state: dict[str, torch.Tensor], network: str) -> list[str]:
    """Copy a classification network's weights (the store entry of detector ``network``'s backbone
    network) into the detector's backbone, tensor by tensor in the classification network's order
    (its layers are the backbone's, under other names: ``layer1.0.conv1`` or ``features.3`` there,
    ``backbone.body.layer1.0.conv1`` or ``backbone.body.3`` here); return the names of the
    detector's other parameters (neck and heads, left fresh)."""
    from trainyard.networks.table import detector_of, get_network

    detector = detector_of(network)
    assert detector is not None  # only detectors are given ImageNet backbones (finetune.resolve_for_network)
    shapes, head = network_layout(detector.backbone, get_network(detector.backbone).image_size)
    missing = [k for k in shapes if k not in head and k not in state]
    if missing:
        raise WeightsMismatch(f"the weights are not {detector.backbone}'s: {len(missing)} of its tensors are "
                              f"missing (first: {missing[0]})")
    backbone = model.get_submodule(detector.backbone_path)
    target = [(k, v) for k, v in backbone.state_dict().items() if not k.endswith(_IGNORED)]
    source = [(k, state[k]) for k in shapes if k not in head][:len(target)]
    for (name, tensor), (source_name, weights) in zip(target, source, strict=True):
        if tuple(weights.shape) != tuple(tensor.shape):
            raise WeightsMismatch(f"the weights of {detector.backbone} do not fit {network}'s backbone at "
                                  f"{detector.backbone_path}.{name}: {source_name} is {list(weights.shape)}, "
                                  f"the detector's {list(tensor.shape)}")
    backbone.load_state_dict({name: weights for (name, _), (_, weights) in zip(target, source)}, strict=False)
    prefix = detector.backbone_path + "."
    return sorted(name for name, _ in model.named_parameters() if not name.startswith(prefix))
