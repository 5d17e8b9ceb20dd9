"""The training loss, including the auxiliary-output convention networks may use.

A network may return a tuple or list in training mode: main logits first, then auxiliary logits
(GoogLeNet's two side classifiers). Each auxiliary cross-entropy is added with the weight from
`model.aux_loss_weights`, 0.3 each when the model does not say.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_AUX_WEIGHT = 0.3


def main_output(outputs) -> torch.Tensor:
    """The main logits of a forward result (the first element of a tuple/list)."""
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


def unwrap_model(model: nn.Module) -> nn.Module:
    """The user's module inside DDP / DataParallel / torch.compile wrappers."""
    return _wrappers(model)[-1]


def is_compiled(model: nn.Module) -> bool:
    """Whether torch.compile wraps ``model`` at any depth (inside DDP too)."""
    return any(_is_compiled_wrapper(layer) for layer in _wrappers(model))


def _wrappers(model: nn.Module) -> list[nn.Module]:
    """``model``, each module it wraps in turn, and last the user's module."""
    layers = [model]
    while True:
        if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            model = model.module
        elif _is_compiled_wrapper(model):
            inner = model._orig_mod
            assert isinstance(inner, nn.Module)  # nn.Module's __getattr__ is typed Tensor | Module
            model = inner
        else:
            return layers
        layers.append(model)


def _is_compiled_wrapper(model: nn.Module) -> bool:
    return type(model).__name__ == "OptimizedModule"  # torch.compile; avoids importing dynamo


def aux_loss_weights(model: nn.Module, count: int) -> tuple[float, ...]:
    """Weights of `count` auxiliary outputs: model.aux_loss_weights, or 0.3 each."""
    model = unwrap_model(model)
    weights = tuple(getattr(model, "aux_loss_weights", (DEFAULT_AUX_WEIGHT,) * count))
    if len(weights) < count:
        raise ValueError(f"model has {count} auxiliary outputs but {len(weights)} aux_loss_weights")
    return weights[:count]


def training_loss(outputs, targets: torch.Tensor, model: nn.Module) -> torch.Tensor:
    """Cross-entropy of the main logits plus weighted cross-entropy of any auxiliary logits."""
    if not isinstance(outputs, (tuple, list)):
        return F.cross_entropy(outputs, targets)
    main, *aux = outputs
    loss = F.cross_entropy(main, targets)
    for weight, logits in zip(aux_loss_weights(model, len(aux)), aux):
        if logits is None:  # a head that did not run this step
            continue
        loss = loss + weight * F.cross_entropy(logits, targets)
    return loss
