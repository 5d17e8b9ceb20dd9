"""Custom networks: a Python file defining `build(num_classes, in_channels, image_size)`.

Loading compiles the user's text under its own file name, so every error can be reported with a
line number in that text ("line 7: NameError: name 'nn2' is not defined"). `check_network`
runs the file in this process; isolated.py's `check_network_isolated` runs it in a child
process (`python -m trainyard.networks.check`), so code that hangs or crashes cannot harm the server.
On a detection dataset the same ``build`` returns a detector (custom_detection.py states the
contract; detection_check.py checks it).
"""

from __future__ import annotations

import linecache
import sys
import traceback
import types
from collections.abc import Callable

import torch
from torch import nn

from trainyard.core.errors import InvalidInput

from .detection import is_detector
from .layer_errors import DefinitionLines, LayerWatch
from .loss import main_output
from .source_check import BUILD_CONTRACT

MODULE_NAME = "trainyard_custom_network"  # the module a custom network file runs as
# What user code may raise that we report; SystemExit too, so exit() cannot end our process.
_USER_ERRORS = (Exception, SystemExit)


class NetworkError(InvalidInput):
    """A custom network that does not load, build or run; `lineno` points into the user's file."""

    def __init__(self, message: str, lineno: int | None = None, filename: str = "network.py"):
        self.message = message
        self.lineno = lineno
        self.filename = filename
        super().__init__(message)


def load_network_source(source: str, filename: str = "network.py") -> Callable[..., nn.Module]:
    """Compile and run `source` in a fresh module namespace; return its `build` function."""
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise NetworkError(f"line {exc.lineno}: SyntaxError: {exc.msg}", exc.lineno, filename) from None
    # Tracebacks and inspect.getsource() find the user's lines through linecache.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = filename
    # Registered because dataclasses, pickle and inspect look classes up in sys.modules; the
    # last network loaded in a process owns the name.
    sys.modules[MODULE_NAME] = module
    try:
        exec(code, module.__dict__)
    except _USER_ERRORS as exc:
        raise _user_error(exc, filename) from None
    build = module.__dict__.get("build")
    if not callable(build):
        raise NetworkError(BUILD_CONTRACT, None, filename)
    return build


def check_network(
    source: str, num_classes: int, in_channels: int, image_size: int, batch: int = 2,
    filename: str = "network.py",
) -> nn.Module:
    """Load, build and run `source` on a random batch; raise NetworkError on any problem."""
    build = load_network_source(source, filename)
    return check_model(lambda: build(num_classes, in_channels, image_size),
                       num_classes, in_channels, image_size, batch, filename)


def check_model(
    make: Callable[[], nn.Module], num_classes: int, in_channels: int, image_size: int,
    batch: int = 2, filename: str = "network.py", input_size: tuple[int, int] | None = None,
) -> nn.Module:
    """Build with `make()`, then run a training-mode and an eval-mode forward pass on CPU.

    The input is `input_size` (height, width) when the images are not square, else image_size
    square. A failed forward pass names the layer it failed in (layer_errors.py) and the line of
    the file that made it. A detector is checked by detection_check.py instead.
    """
    model, lines = build_model(make, filename)
    size = input_size or (image_size, image_size)
    if is_detector(model):
        raise NetworkError("build() returns a detector (it takes images and boxes): train it on a detection "
                           "dataset", None, filename)
    x = torch.rand(batch, in_channels, *size)
    # Training mode first: it also exercises auxiliary heads that eval mode skips.
    for training in (True, False):
        outputs = run_forward(model, lines, filename, training, lambda: model(x))
        _check_outputs(outputs, batch, num_classes, training, filename)
    return model


def build_model(make: Callable[[], nn.Module], filename: str) -> tuple[nn.Module, DefinitionLines]:
    """``make()``'s module and the lines of ``filename`` that made its layers; NetworkError if
    it fails or is no module."""
    try:
        with DefinitionLines(filename) as lines:
            model = make()
    except _USER_ERRORS as exc:
        raise _user_error(exc, filename, "build() failed") from None
    if not isinstance(model, nn.Module):
        raise NetworkError(f"build() must return a torch.nn.Module, not {type(model).__name__}",
                           None, filename)
    return model, lines


def run_forward(model: nn.Module, lines: DefinitionLines, filename: str, training: bool,
                forward: Callable[[], object]) -> object:
    """``forward()`` in training or eval mode, without gradients; a failure is a NetworkError
    naming the layer, at the user's line in the traceback or else the line that made the layer."""
    model.train(training)
    with torch.no_grad(), LayerWatch(model) as watch:
        try:
            return forward()
        except _USER_ERRORS as exc:
            raise _user_error(exc, filename, "forward() failed", watch.explain(exc),
                              lines.line(watch.failed_module())) from None


def _check_outputs(outputs, batch: int, num_classes: int, training: bool, filename: str) -> None:
    mode = "training" if training else "eval"
    if isinstance(outputs, (tuple, list)) and not outputs:
        raise NetworkError(f"forward() returned an empty {type(outputs).__name__} in {mode} mode",
                           None, filename)
    # Eval mode must give plain logits; training mode may add auxiliary logits after them.
    items = outputs if training and isinstance(outputs, (tuple, list)) else [main_output(outputs)]
    for index, out in enumerate(items):
        what = "the output" if index == 0 else f"auxiliary output {index}"
        if out is None and index > 0:
            continue
        if not isinstance(out, torch.Tensor):
            raise NetworkError(f"{what} in {mode} mode is a {type(out).__name__}, not a tensor",
                               None, filename)
        if tuple(out.shape) != (batch, num_classes):
            raise NetworkError(
                f"{what} in {mode} mode has shape {tuple(out.shape)}, expected "
                f"{(batch, num_classes)} (batch, num_classes): the last layer must have "
                f"num_classes={num_classes} outputs", None, filename)


def _user_error(exc: BaseException, filename: str, context: str = "",
                detail: str | None = None, defined_at: int | None = None) -> NetworkError:
    """A NetworkError pointing at the deepest line of the user's file in `exc`'s traceback;
    ``detail`` (such as the failed layer) replaces the exception's own text, and ``defined_at``
    (the line that made the failed layer) is where it points instead: the line to change."""
    lineno = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            lineno = line
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        lineno = exc.lineno
    if detail is not None and defined_at is not None:
        called = f" (called at line {lineno})" if lineno not in (None, defined_at) else ""
        return NetworkError(f"line {defined_at}: {detail}{called}", defined_at, filename)
    if detail is not None:
        return NetworkError(f"line {lineno}: {detail}" if lineno is not None else detail, lineno, filename)
    detail = f"{type(exc).__name__}: {exc}"
    if lineno is not None:
        return NetworkError(f"line {lineno}: {detail}", lineno, filename)
    prefix = f"{context}: " if context else ""
    return NetworkError(prefix + detail, None, filename)
