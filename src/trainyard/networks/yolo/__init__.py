"""The YOLO family: one-stage, anchor-free detectors (n / s / m) written for trainyard.

A CSP backbone with C2f stages and SPPF, a PAN neck (blocks.py), a decoupled head predicting
box-side distributions (head.py), task-aligned assignment (assign.py), BCE + CIoU + DFL losses
(loss.py), and the torchvision-style detector around them (model.py). Each size is a
`YoloNetwork` builder; table.py registers them as ``yolo_n``, ``yolo_s``, ``yolo_m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

_SOURCE = '''"""{title} as a trainyard custom detection network (random initialisation).

Edit freely: trainyard calls build(num_classes, in_channels, image_size) and trains the module
on a detection dataset. num_classes is the dataset's class count (no background: label_offset 0).
"""

from trainyard.networks.yolo.model import YoloDetector


def build(num_classes, in_channels, image_size):
    return YoloDetector(num_classes, in_channels, width={width}, depth={depth}, max_channels={max_channels})
'''


@dataclass(frozen=True)
class YoloNetwork:
    """One size of the family: ``build(num_classes, in_channels, image_size)``."""

    title: str
    width: float  # channel multiplier
    depth: float  # bottleneck-count multiplier
    max_channels: int

    def __call__(self, num_classes: int, in_channels: int, image_size: int) -> nn.Module:
        from .model import YoloDetector

        return YoloDetector(num_classes, in_channels, self.width, self.depth, self.max_channels)

    def source(self) -> str:
        """A stand-alone custom-network file that builds the same detector."""
        return _SOURCE.format(title=self.title, width=self.width, depth=self.depth, max_channels=self.max_channels)


yolo_n = YoloNetwork("YOLO n (trainyard)", 0.25, 0.33, 1024)
yolo_s = YoloNetwork("YOLO s (trainyard)", 0.50, 0.33, 1024)
yolo_m = YoloNetwork("YOLO m (trainyard)", 0.75, 0.67, 768)
