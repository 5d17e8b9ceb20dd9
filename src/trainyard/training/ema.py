"""An exponential moving average of a network's weights: what validates and what is saved.

After each optimizer step every floating-point tensor of the network's state (parameters and
BatchNorm statistics) moves the average toward it by ``1 - d``, with ``d`` ramped up from 0:
``decay * (1 - exp(-updates / RAMP))``, so early on (and in short runs) the average follows the
weights closely, and later smooths many steps: the noise of the last steps averages out, which
is worth a few points of mAP for a detector (Polyak averaging, as the YOLO family trains).
Integer entries (BatchNorm's step counts) are copied.

Checkpoints save the average as ``model`` (what inference, export and fine-tuning load) and the
trained weights as ``trained_model`` with the update count (``ema_updates``), so a resumed run
continues both exactly (resume.py, build_run.py).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

RAMP = 2000.0  # optimizer steps over which the decay rises to its set value (1 - 1/e of it)


class WeightAverage:
    """The average of ``source``'s weights; ``update()`` after each optimizer step."""

    def __init__(self, source: nn.Module, decay: float, updates: int = 0):
        self.source = source
        self.decay = decay
        self.updates = updates
        self.model = copy.deepcopy(source).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    def current_decay(self) -> float:
        return self.decay * (1 - math.exp(-self.updates / RAMP))

    @torch.no_grad()
    def update(self) -> None:
        self.updates += 1
        d = self.current_decay()
        mine, theirs = self.model.state_dict(), self.source.state_dict()
        for name, value in theirs.items():
            if value.dtype.is_floating_point:
                mine[name].mul_(d).add_(value.detach(), alpha=1 - d)
            else:
                mine[name].copy_(value)


def checkpoint_entries(net: nn.Module, average: WeightAverage | None) -> dict:
    """A checkpoint's weights: the average as ``model`` where there is one, the net's otherwise."""
    if average is None:
        return {"model": net.state_dict()}
    return {"model": average.model.state_dict(), "trained_model": net.state_dict(),
            "ema_updates": average.updates}


def load_weights(net: nn.Module, ckpt: dict) -> None:
    """A resumed net's own weights: the trained ones where the checkpoint kept an average."""
    net.load_state_dict(ckpt.get("trained_model") or ckpt["model"])


def resumed_average(net: nn.Module, decay: float, ckpt: dict | None) -> WeightAverage | None:
    """The run's average (None with ``decay`` 0): continued from ``ckpt`` where it kept one."""
    if not decay:
        return None
    average = WeightAverage(net, decay)
    if ckpt and "trained_model" in ckpt:
        average.model.load_state_dict(ckpt["model"])
        average.updates = int(ckpt["ema_updates"])
    return average
