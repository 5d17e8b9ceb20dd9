"""Detectors on any timm backbone, as networks: ``fasterrcnn:timm:<model>``, ``retinanet:timm:<model>``
and ``fcos:timm:<model>`` for any ``timm:<model>`` name (timm_networks.py).

A family like ``timm:`` itself: not copied into the registry, resolved by name (table.py asks
`resolve`), checked against timm's cached list of names without torch (`check_name`). The model
is timm_fpn.py's `build_detector`: timm's ``features_only`` backbone under torchvision's FPN and
head. ``--pretrained imagenet`` starts its backbone from the store's entry of ``timm:<model>``
(`network(name).backbone`), as a standard detector's starts from its backbone network's
(weights/fit.py ``load_detector_backbone``); the store never downloads at training time.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.core.errors import NotFound
from trainyard.core.vocabulary import Task

from .detection import DetectionNetwork
from .info import TIMM_PREFIX, NetworkInfo, UnknownNetwork

if TYPE_CHECKING:
    from torch import nn

TASK: Task = "detection"  # what a family's networks train on (table.network_task)
# head -> (title, label of the dataset's class 0); timm_fpn.HEADS says which stages each takes
HEADS = {"fasterrcnn": ("Faster R-CNN", 1), "retinanet": ("RetinaNet", 0), "fcos": ("FCOS", 0)}
FAMILIES = [f"{head}:{TIMM_PREFIX}<model>" for head in HEADS]
IMAGE_SIZE, BATCH_SIZE, MIN_IMAGE_SIZE = 320, 4, 32  # the sizes the standard detectors default to on a CPU


def is_name(name: object) -> bool:
    """Whether ``name`` is of this family (whether its model exists: `check_name`)."""
    return isinstance(name, str) and name.partition(":")[0] in HEADS and name.partition(":")[2].startswith(TIMM_PREFIX)


def check_name(name: str) -> tuple[str, str]:
    """(head, timm model) of ``<head>:timm:<model>``, refused (UnknownNetwork) where timm has no
    such model: from timm's cached names, without torch."""
    from . import timm_networks

    head, _, backbone = name.partition(":")
    if head not in HEADS or not backbone.startswith(TIMM_PREFIX):
        raise UnknownNetwork("network", name, FAMILIES)
    try:
        return head, timm_networks.check_name(backbone)
    except timm_networks.UnknownTimmModel as unknown:  # its suggestions, as names of this head
        raise UnknownTimmDetector(name, [f"{head}:{close}" for close in unknown.valid]) from None


class UnknownTimmDetector(UnknownNetwork):
    """``<head>:timm:<model>`` where timm has no such model; the message suggests close ones."""

    def __init__(self, name: str, close: list[str]):
        self.name, self.valid = name, close
        hint = f"; did you mean {', '.join(close)}?" if close else "; see GET /api/networks/search"
        NotFound.__init__(self, f"unknown network {name!r}: timm has no model "
                                f"{name.partition(TIMM_PREFIX)[2]!r}{hint}")


class TimmDetectionNetwork(DetectionNetwork):
    """A torchvision head on a timm backbone, with what a standard detector tells about itself
    (its backbone network, where the backbone sits, its label offset)."""

    def __call__(self, num_classes: int, in_channels: int, image_size: int) -> nn.Module:
        from .timm_fpn import build_detector  # torch, torchvision and timm: only when built

        head, model = self.detector.split(":", 1)
        return build_detector(head, model, num_classes, image_size)

    def source(self) -> str:
        """timm_fpn.py with a ``build`` for this head and backbone: a custom detection network file."""
        head, model = self.detector.split(":", 1)
        return (Path(__file__).with_name("timm_fpn.py").read_text(encoding="utf-8")
                + f"\n\ndef build(num_classes, in_channels, image_size):\n"
                f"    return build_detector({head!r}, {model!r}, num_classes, image_size)\n")


@cache
def network(name: str) -> TimmDetectionNetwork:
    """The detector ``name`` names (checked)."""
    head, model = check_name(name)
    title, offset = HEADS[head]
    return TimmDetectionNetwork(f"{head}:{model}", f"{title}, timm {model} FPN", offset, TIMM_PREFIX + model,
                                "backbone.body")


@cache
def resolve(name: str):
    """(NetworkInfo, builder, source function) for ``<head>:timm:<model>``, as timm_networks.resolve."""
    detector = network(name)
    head, model = detector.detector.split(":", 1)
    info = NetworkInfo(name=name, description=f"{HEADS[head][0]} on timm's {model} (torchvision's head and FPN)",
                       image_size=IMAGE_SIZE, batch_size=BATCH_SIZE, source_module="timm",
                       min_image_size=MIN_IMAGE_SIZE, task=TASK)
    return info, detector, detector.source
