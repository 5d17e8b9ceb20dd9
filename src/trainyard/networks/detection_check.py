"""Checking a detector as training and inference will run it: torchvision's detection contract.

A custom detection network's ``build(num_classes, in_channels, image_size)`` returns any
``nn.Module`` that honours what torchvision's detectors do (custom_detection.py documents it for
the user):

- training mode: ``model(images, targets)`` with images a (N, 3, H, W) 0..1 tensor (iterable as
  a list of images) and targets a list of ``{"boxes": (b, 4) float xyxy pixels, "labels": (b,)
  int64}``, returns a dict of scalar losses (training sums them);
- eval mode: ``model(images)`` returns one ``{"boxes", "labels", "scores"}`` dict per image.

`check_detector` runs both on a random batch with one box per image, each failure a NetworkError
naming the layer and the line (custom.run_forward), each broken promise a NetworkError saying
what was expected.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import nn

from .custom import NetworkError, build_model, run_forward
from .detection import fit_input, label_offset
from .layer_errors import DefinitionLines

RESULT_KEYS = ("boxes", "labels", "scores")


def check_detector_model(make: Callable[[], nn.Module], num_classes: int, size: tuple[int, int],
                         batch: int = 2, filename: str = "network.py") -> nn.Module:
    """Build with ``make()`` and check the result as a detector (custom.check_model's twin)."""
    model, lines = build_model(make, filename)
    check_detector(model, lines, num_classes, size, batch, filename)
    return model


def check_detector(model: nn.Module, lines: DefinitionLines, num_classes: int, size: tuple[int, int],
                   batch: int, filename: str) -> None:
    """Run ``model`` as a detector in training and eval mode; NetworkError on any problem."""
    _check_signature(model, filename)
    height, width = size
    fit_input(model, height, width)  # as training does: the stored size, not torchvision's 800
    images = torch.rand(batch, 3, height, width)
    offset = label_offset(model)
    box = torch.tensor([[width / 4, height / 4, 3 * width / 4, 3 * height / 4]])
    targets = [{"boxes": box.clone(), "labels": torch.tensor([offset + i % num_classes])} for i in range(batch)]
    losses = run_forward(model, lines, filename, True, lambda: model(images, targets))
    _check_losses(losses, filename)
    found = run_forward(model, lines, filename, False, lambda: model(images))
    _check_results(found, batch, filename)


def _check_signature(model: nn.Module, filename: str) -> None:
    """A module whose forward cannot take (images, targets) is a classifier, most likely."""
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError):  # no signature to read (a builtin): running it will tell
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise NetworkError(f"a detector's forward must take (images, targets) in training mode: "
                           f"{type(model).__name__}.forward takes {signature}; is it a classifier?",
                           None, filename) from None


def _check_losses(losses: object, filename: str) -> None:
    contract = "in training mode model(images, targets) must return a dict of losses {name: scalar tensor}"
    if not isinstance(losses, dict) or not losses:
        raise NetworkError(f"{contract}, not {_what(losses)}", None, filename)
    for name, value in losses.items():
        if not isinstance(value, torch.Tensor) or value.numel() != 1 or not value.is_floating_point():
            raise NetworkError(f"{contract}: loss {name!r} is {_what(value)}", None, filename)


def _check_results(found: object, batch: int, filename: str) -> None:
    contract = (f"in eval mode model(images) must return a list of {batch} dicts (one per image) with "
                "boxes (n, 4), labels (n,) and scores (n,)")
    if not isinstance(found, (list, tuple)) or len(found) != batch:
        raise NetworkError(f"{contract}, not {_what(found)}", None, filename)
    for result in found:
        if not isinstance(result, dict) or any(not isinstance(result.get(k), torch.Tensor) for k in RESULT_KEYS):
            keys = sorted(result) if isinstance(result, dict) else None
            raise NetworkError(f"{contract}; one image's answer is {_what(result)}"
                               + (f" with keys {keys}" if keys is not None else ""), None, filename)
        n = result["boxes"].shape[0] if result["boxes"].dim() == 2 else -1
        if tuple(result["boxes"].shape) != (n, 4) or result["labels"].shape != (n,) or result["scores"].shape != (n,):
            shapes = ", ".join(f"{k} {tuple(result[k].shape)}" for k in RESULT_KEYS)
            raise NetworkError(f"{contract}; one image's answer has {shapes}", None, filename)


def _what(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"
