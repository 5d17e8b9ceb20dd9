"""Describe a network layer by layer (the "Visualize" button): names, shapes, parameters, settings.

One dummy forward pass of a single zero image in eval mode, watched by hooks on every module.
Layers are listed in the order their forward starts, so a container comes just before its
children; `depth` and `parent` let a UI draw the tree (GoogLeNet's inception blocks show their
branch1..branch4 children side by side). Modules that did not run (GoogLeNet's auxiliary heads
in eval mode) follow at the end with `output_shape` None, so every parameter is accounted for.
"""

from __future__ import annotations

import torch
from torch import nn

MAX_SETTINGS_CHARS = 80


def inspect_network(model: nn.Module, input_shape: tuple[int, int, int]) -> dict:
    """Run one (1, C, H, W) zero batch through `model` and describe each module it contains.

    `params` of a layer counts only parameters held directly by it (its own weights), so the
    layers' `params` add up to the model's total; `params_total` includes its children.
    """
    names = {module: name for name, module in model.named_modules() if name}
    layers: dict[str, dict] = {}

    def before(module, args):
        name = names[module]
        if name not in layers:  # a module used twice is described at its first use
            layers[name] = _describe(name, module)

    def after(module, args, output):
        layer = layers[names[module]]
        if layer["output_shape"] is None:
            layer["output_shape"] = _shape(output)

    handles = [m.register_forward_pre_hook(before) for m in names]
    handles += [m.register_forward_hook(after) for m in names]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            output = model(torch.zeros(1, *input_shape, **_tensor_kwargs(model)))
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    for module, name in names.items():  # modules the forward pass skipped
        if name not in layers:
            layers[name] = _describe(name, module)
    params = sum(p.numel() for p in model.parameters())
    return {
        "layers": list(layers.values()),
        "params": params,
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "input_shape": list(input_shape),
        "output_shape": _shape(output),
    }


def _describe(name: str, module: nn.Module) -> dict:
    own = list(module.parameters(recurse=False))
    parent, _, _ = name.rpartition(".")
    return {
        "name": name,
        "type": type(module).__name__,
        "output_shape": None,
        "params": sum(p.numel() for p in own),
        "params_total": sum(p.numel() for p in module.parameters()),
        "trainable": any(p.requires_grad for p in module.parameters()),
        "depth": name.count("."),
        "parent": parent,
        "leaf": next(module.children(), None) is None,
        "settings": layer_settings(module),
    }


def _shape(output) -> list[int] | None:
    """Shape without the batch dimension of a tensor, or of the first tensor in a tuple/dict."""
    if isinstance(output, torch.Tensor):
        return list(output.shape[1:])
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)) and output:
        return _shape(output[0])
    return None


def _tensor_kwargs(model: nn.Module) -> dict:
    first = next(model.parameters(), None)
    if first is None or not first.is_floating_point():
        return {}
    return {"device": first.device, "dtype": first.dtype}


def _k(value) -> str:
    """Kernel/stride/padding as '3' when square, '3x5' otherwise."""
    if isinstance(value, (tuple, list)):
        return str(value[0]) if len(set(value)) == 1 else "x".join(map(str, value))
    return str(value)


def _conv(m: nn.Conv2d) -> str:
    text = f"{m.in_channels}→{m.out_channels}, k={_k(m.kernel_size)}, s={_k(m.stride)}, p={_k(m.padding)}"
    if m.groups != 1:
        text += f", groups={m.groups}"
    return text + f", bias={m.bias is not None}"


def _pool(m: nn.Module) -> str:
    text = f"k={_k(m.kernel_size)}, s={_k(m.stride)}, p={_k(m.padding)}"
    return text + (", ceil" if getattr(m, "ceil_mode", False) else "")


# Readable settings for common layer types; anything else falls back to its extra_repr().
_SETTINGS = {
    nn.Conv2d: _conv,
    nn.Linear: lambda m: f"{m.in_features}→{m.out_features}, bias={m.bias is not None}",
    nn.BatchNorm2d: lambda m: f"{m.num_features}, eps={m.eps:g}",
    nn.MaxPool2d: _pool,
    nn.AvgPool2d: _pool,
    nn.Dropout: lambda m: f"p={m.p:g}",
    nn.LocalResponseNorm: lambda m: f"size={m.size}, α={m.alpha:g}, β={m.beta:g}, k={m.k:g}",
    nn.ReLU: lambda m: "",
}


def layer_settings(module: nn.Module) -> str:
    """A short human-readable summary of a layer's settings, e.g. '3→64, k=3, s=1, p=1, bias=True'."""
    for cls in type(module).__mro__:
        if cls in _SETTINGS:
            return _SETTINGS[cls](module)
    text = " ".join(module.extra_repr().split())
    return text if len(text) <= MAX_SETTINGS_CHARS else text[: MAX_SETTINGS_CHARS - 1] + "…"
