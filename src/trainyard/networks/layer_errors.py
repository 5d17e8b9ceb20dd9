"""Name the layer a forward pass failed in, and say what it expected and what it got.

PyTorch's own messages ("mat1 and mat2 shapes cannot be multiplied (2x14400 and 123x10)") name
no layer. `LayerWatch` follows the forward pass with hooks: a module whose forward started and
never finished is where the error was raised, and the input it was given says what went wrong:

    layer 'classifier.1' (Linear) expects 123 inputs, gets 14400
"""

from __future__ import annotations

import torch
from torch import nn


class LayerWatch:
    """``with LayerWatch(model) as watch: model(x)``; after a failure ``watch.explain(exc)``."""

    def __init__(self, model: nn.Module):
        self.names = {module: name for name, module in model.named_modules() if name}
        self.running: list[tuple[str, nn.Module, tuple]] = []  # forwards begun, not yet ended
        self.handles: list = []

    def __enter__(self) -> LayerWatch:
        for module in self.names:
            self.handles.append(module.register_forward_pre_hook(self._before))
            self.handles.append(module.register_forward_hook(self._after))
        return self

    def __exit__(self, *exc_info) -> None:
        for handle in self.handles:
            handle.remove()

    def reset(self) -> None:
        self.running.clear()

    def _before(self, module, args):
        self.running.append((self.names[module], module, args))

    def _after(self, module, args, output):
        if self.running and self.running[-1][1] is module:
            self.running.pop()

    def explain(self, exc: BaseException) -> str | None:
        """A one-line description of the innermost failed layer, or None if no layer was running."""
        if not self.running:
            return None
        name, module, args = self.running[-1]
        x = next((a for a in args if isinstance(a, torch.Tensor)), None)
        return describe_failure(name, module, x, exc)


def describe_failure(name: str, module: nn.Module, x: torch.Tensor | None, exc: BaseException) -> str:
    where = f"layer '{name}' ({type(module).__name__})"
    if x is None:
        return f"{where}: {_first_line(exc)}"
    if isinstance(module, nn.Linear) and x.shape[-1] != module.in_features:
        return f"{where} expects {module.in_features} inputs, gets {x.shape[-1]}"
    if isinstance(module, nn.modules.conv._ConvNd) and x.dim() > 1 and x.shape[1] != module.in_channels:
        return f"{where} expects {module.in_channels} input channels, gets {x.shape[1]}"
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and x.dim() > 1 and x.shape[1] != module.num_features:
        return f"{where} expects {module.num_features} channels, gets {x.shape[1]}"
    shape = "×".join(str(d) for d in x.shape[1:])
    return f"{where} fails on its {shape} input: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
