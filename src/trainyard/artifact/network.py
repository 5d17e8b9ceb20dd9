"""Build a job's network, and start it from pretrained weights (fine-tuning).

A network is a standard one by name (the registry) or a custom network file's source; both
expose ``build(num_classes, in_channels, image_size)``. Pretrained weights come from a trainyard
checkpoint (any epoch of any job) or an uploaded weights file (.safetensors, or a .pt/.pth state
dict). They load only as safetensors or with ``weights_only=True``, never by unpickling code.
Tensors whose name and shape match are copied; the rest (typically the classifier, when the
class count differs) keep their fresh initialisation and are reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

from trainyard.core.errors import InvalidInput
from trainyard.networks import create_network, load_network_source
from trainyard.networks.state_dicts import NotWeights, read_state_dict

CUSTOM_FILENAME = "network.py"


def create_model(network: str | None, network_source: str | None, num_classes: int,
                 in_channels: int, image_size: int, input_size: tuple[int, int] | None = None) -> nn.Module:
    """A freshly initialised network: the standard ``network`` or the custom ``network_source``.

    ``input_size`` (height, width) is the real input when it is not image_size x image_size;
    lazy layers (nn.LazyLinear, ...) are materialised with one dummy batch of that size.
    """
    if network is not None:
        model = create_network(network, num_classes, in_channels, image_size)
    elif network_source is not None:
        model = load_network_source(network_source, CUSTOM_FILENAME)(num_classes, in_channels, image_size)
        if not isinstance(model, nn.Module):
            raise TypeError(f"build() must return a torch.nn.Module, not {type(model).__name__}")
    else:
        raise ValueError("a model needs a network name or a network source")
    _materialize(model, in_channels, input_size or (image_size, image_size))
    return model


def _materialize(model: nn.Module, in_channels: int, size: tuple[int, int]) -> None:
    # Lazy parameters have no shape until a forward pass; state_dict loading, optimizers and
    # checkpoints all need real ones. Eval mode, so batch statistics and dropout stay untouched.
    if not any(isinstance(p, UninitializedParameter) for p in model.parameters()):
        return
    training = model.training
    with torch.no_grad():
        model.eval()(torch.zeros(2, in_channels, *size))
    model.train(training)


class PretrainedError(InvalidInput):
    """Pretrained weights that cannot be read or do not fit the network at all."""


@dataclass
class LoadReport:
    """What `load_pretrained` did: tensors copied, skipped (shape differs) and missing."""

    loaded: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # kept freshly initialised
    missing: list[str] = field(default_factory=list)  # not in the file: freshly initialised


def read_weights(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """A state dict from a trainyard checkpoint, a .safetensors file or a .pt/.pth file."""
    path = Path(path)
    if not path.is_file():
        raise PretrainedError(f"pretrained weights {path} not found")
    try:
        return read_state_dict(path)
    except NotWeights as exc:
        raise PretrainedError(f"cannot read pretrained weights: {exc}") from None


def load_pretrained(model: nn.Module, path: str | os.PathLike) -> LoadReport:
    """Copy the tensors of ``path`` whose name and shape match into ``model``."""
    source = read_weights(path)
    target = model.state_dict()
    report = LoadReport()
    matched = {}
    for name, tensor in target.items():
        if name not in source:
            report.missing.append(name)
        elif source[name].shape != tensor.shape:
            report.mismatched.append(name)
        else:
            matched[name] = source[name]
            report.loaded.append(name)
    if not matched:
        raise PretrainedError(f"no tensor of {Path(path).name} fits this network (no name and "
                              "shape in common); was it trained with another network?")
    model.load_state_dict(matched, strict=False)
    return report


def classifier_parameters(model: nn.Module, num_classes: int) -> set[str]:
    """Names of the parameters of every layer with ``num_classes`` outputs (the classifiers)."""
    names: set[str] = set()
    for module_name, module in model.named_modules():
        outputs = getattr(module, "out_features", getattr(module, "out_channels", None))
        if isinstance(module, (nn.Linear, nn.Conv2d)) and outputs == num_classes:
            prefix = f"{module_name}." if module_name else ""
            names.update(prefix + n for n, _ in module.named_parameters(recurse=False))
    return names


def trainable_after_finetune(model: nn.Module, report: LoadReport, num_classes: int) -> list[str]:
    """Parameters that stay trainable with freeze_backbone: classifiers and all not loaded."""
    fresh = set(report.mismatched) | set(report.missing)
    keep = fresh | classifier_parameters(model, num_classes)
    return [name for name, _ in model.named_parameters() if name in keep]


def freeze_except(model: nn.Module, trainable: list[str]) -> int:
    """Set requires_grad=False on every parameter not in ``trainable``; return how many froze."""
    keep = set(trainable)
    frozen = 0
    for name, param in model.named_parameters():
        param.requires_grad_(name in keep)
        frozen += name not in keep
    return frozen
