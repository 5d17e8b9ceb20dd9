"""The parts of a detector that validation's two passes over a batch share, computed once.

A torchvision detector gives its boxes only in eval mode and its losses only in training mode,
so validation runs each batch twice (training/detection/steps.py). Most of either pass is the
backbone (with its FPN) and, for the one-stage detectors, the head over every anchor: parts
whose output depends only on their input once they are in eval mode. Within `computed_once`,
each such part the model has (``SHARED``, torchvision's names; a custom detector built from
torchvision's classes has them too) remembers its last input and output, and answers a repeat
of that input (the same tensors, or equal ones: the training-mode transform makes a new but
identical image batch) from memory. The second pass then costs only what differs between the
modes: the anchors matched to the targets and the losses (and Faster R-CNN's region proposals
and box head, which sample differently in training). A part never sees an input it has not
computed: anything else (another size, other images) is computed as before.

The shared parts stay in eval mode in the loss pass, as they were for the boxes: with no
dropout in them (none in torchvision's detectors) that is the training-mode maths exactly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

SHARED = ("backbone", "head", "rpn.head")  # RetinaNet/FCOS/SSD: backbone, head; Faster R-CNN: backbone, RPN head


def shared_parts(model: nn.Module) -> list[nn.Module]:
    """The parts of ``model`` named in SHARED that it has."""
    found = []
    for name in SHARED:
        part: Any = model
        for step in name.split("."):
            part = getattr(part, step, None)
        if isinstance(part, nn.Module):
            found.append(part)
    return found


@contextlib.contextmanager
def computed_once(parts: list[nn.Module]) -> Iterator[None]:
    """Within: each of ``parts`` answers a repeat of its latest input from memory."""
    # An instance's own ``forward`` (in its __dict__, where Module.__setattr__ would put a function)
    # shadows the class's; writing the dict says so to mypy, which forbids assigning to a method.
    own = [(part, part.__dict__.get("forward")) for part in parts]
    for part, _ in own:
        part.__dict__["forward"] = _remembering(part.forward)
    try:
        yield
    finally:
        for part, before in own:
            if before is None:
                del part.forward
            else:
                part.__dict__["forward"] = before


def _remembering(forward: Callable) -> Callable:
    last: list = []  # [(args, output)]: one batch's, the latest

    def remembered(*args: Any) -> Any:
        if last and _same(args, last[0][0]):
            return last[0][1]
        output = forward(*args)
        last[:] = [(args, output)]
        return output
    return remembered


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a is b or (a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return False
