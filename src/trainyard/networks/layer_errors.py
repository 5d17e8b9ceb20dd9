"""Name the layer a forward pass failed in, and say what it expected and what it got.

PyTorch's own messages ("mat1 and mat2 shapes cannot be multiplied (2x14400 and 123x10)") name
no layer. `LayerWatch` follows the forward pass with hooks: a module whose forward started and
never finished is where the error was raised, and the input it was given says what went wrong:

    layer 'classifier.1' (Linear) expects 123 inputs, gets 14400

`DefinitionLines` notes, while the network is built, the line of the user's file that made each
module, so the error points at the line to change (``nn.Linear(123, 10)`` in ``__init__``), not
at the ``forward`` line that called it.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from types import FrameType

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

    def failed_module(self) -> nn.Module | None:
        """The innermost module whose forward began and never ended, if any."""
        return self.running[-1][1] if self.running else None

    def explain(self, exc: BaseException) -> str | None:
        """A one-line description of the innermost failed layer, or None if no layer was running."""
        if not self.running:
            return None
        name, module, args = self.running[-1]
        x = next((a for a in args if isinstance(a, torch.Tensor)), None)
        return describe_failure(name, module, x, exc)


class DefinitionLines:
    """``with DefinitionLines("network.py") as made: model = build()``; then ``made.line(module)``
    is the line of network.py whose call made ``module`` (None when another file made it).

    While inside, every ``nn.Module.__init__`` notes the nearest frame of the user's file that is
    not the module's own ``__init__`` (a custom block's ``super().__init__()`` is not where it is
    made). Only for the build: the check's child runs one network, so the patch touches nothing else.
    """

    def __init__(self, filename: str):
        self.filename = filename
        self._lines: weakref.WeakKeyDictionary[nn.Module, int] = weakref.WeakKeyDictionary()
        self._original = nn.Module.__init__

    def __enter__(self) -> DefinitionLines:
        original, note = self._original, self._note

        def init(module: nn.Module, *args, **kwargs) -> None:
            original(module, *args, **kwargs)
            note(module)

        _set_module_init(init)
        return self

    def __exit__(self, *exc_info) -> None:
        _set_module_init(self._original)

    def _note(self, module: nn.Module) -> None:
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.filename and frame.f_locals.get("self") is not module:
                self._lines.setdefault(module, frame.f_lineno)
                return
            frame = frame.f_back

    def line(self, module: nn.Module | None) -> int | None:
        return self._lines.get(module) if module is not None else None


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


def _set_module_init(init: Callable[..., None]) -> None:
    """``nn.Module.__init__`` replaced by ``init``: DefinitionLines' patch and its undoing."""
    nn.Module.__init__ = init  # type: ignore[method-assign]  # a deliberate patch, for one build
