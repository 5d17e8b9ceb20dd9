"""The standard detection networks: torchvision's detectors as registry builders.

A detector is built like any standard network, ``build(num_classes, in_channels, image_size)``
with ``num_classes`` the dataset's classes (no background): each builder adds torchvision's
background class where its model has one (Faster R-CNN, SSDlite: class 0 is background, so the
dataset's class k is label k + 1) and none where its model has none (RetinaNet, FCOS: sigmoid
classifiers, label k is class k). The offset is kept on the model as ``label_offset``.

Torchvision's detectors resize their input inside (``GeneralizedRCNNTransform``) to a min/max
size of their own (800/1333, or SSDlite's fixed 320x320): `fit_input` sets it to the dataset's
stored size, so small images are not upscaled (slower and not what the boxes were stored at).
Their input is a batch of 3-channel 0..1 images; they normalise inside (ImageNet mean and std),
so trainyard feeds them unnormalised pixels and grayscale images repeated to three channels.
Weights are never downloaded (weights=None, weights_backbone=None): ImageNet backbone weights
come from the model store, as those of the classification network ``backbone`` names, copied into
the detector's ``backbone_path`` (weights/fit.py ``load_detector_backbone``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # job creation asks which backbone a detector has without loading torch
    from torch import nn

_SOURCE = '''"""{title} from torchvision (random initialisation) as a trainyard custom detection network.

Edit freely: trainyard calls build(num_classes, in_channels, image_size) and trains the module
on a detection dataset. num_classes is the dataset's class count, without background.
"""

from torchvision.models import detection

LABEL_OFFSET = {offset}  # the model's label for the dataset's class 0 (1: 0 is background)


def build(num_classes, in_channels, image_size):
    model = detection.{fn}(weights=None, weights_backbone=None, num_classes=num_classes + LABEL_OFFSET)
    model.label_offset = LABEL_OFFSET
    return model
'''


@dataclass(frozen=True)
class DetectionNetwork:
    """A torchvision detector as a builder: ``build(num_classes, in_channels, image_size)``."""

    detector: str  # its function in torchvision.models.detection (not "torchvision": the weights
    # catalogue lists classification weights of builders with that attribute)
    title: str
    label_offset: int  # 1 where the model reserves label 0 for background, else 0
    backbone: str  # the standard classification network its backbone is (store ImageNet weights)
    backbone_path: str  # where that backbone's layers sit in the detector
    # Why the backbone network's ImageNet weights do not fit this detector ("": they do)
    backbone_unfit: str = ""

    def __call__(self, num_classes: int, in_channels: int, image_size: int) -> nn.Module:
        from torchvision.models import detection  # ~1 s: only when a detector is built

        model = getattr(detection, self.detector)(
            weights=None, weights_backbone=None, num_classes=num_classes + self.label_offset)
        model.label_offset = self.label_offset
        fit_input(model, image_size, image_size)
        return model

    def source(self) -> str:
        """A stand-alone custom-network file that builds the same detector."""
        return _SOURCE.format(title=self.title, fn=self.detector, offset=self.label_offset)


def detection_network(name: str | None) -> DetectionNetwork | None:
    """The tabled detector called ``name``, or None (a classifier, a custom or unknown name; a
    head on a timm backbone: table.detector_of, which asks both)."""
    found = globals().get(name) if name else None
    return found if isinstance(found, DetectionNetwork) else None


def label_offset(model: nn.Module) -> int:
    """The model's label of the dataset's class 0 (custom detectors without one: background 0)."""
    return int(getattr(model, "label_offset", 1))


def is_detector(model: nn.Module) -> bool:
    """Whether ``model`` takes (images, targets) and answers boxes, as torchvision's detectors do."""
    transform = getattr(model, "transform", None)
    return type(transform).__name__ == "GeneralizedRCNNTransform"


def fit_input(model: nn.Module, height: int, width: int) -> None:
    """Make the detector's internal resize keep ``height`` x ``width`` images as they are."""
    transform = getattr(model, "transform", None)
    if transform is None or not hasattr(transform, "min_size"):
        return  # a custom detector that resizes (or not) its own way
    if getattr(transform, "fixed_size", None):  # SSD: one fixed input size
        transform.fixed_size = (height, width)
    # scale = min(min_size / short side, max_size / long side): 1 for images of this size
    transform.min_size = (min(height, width),)
    transform.max_size = max(height, width)


# The builders table.py names (sizes and descriptions are there).
fasterrcnn_resnet50_fpn = DetectionNetwork("fasterrcnn_resnet50_fpn", "Faster R-CNN, ResNet-50 FPN", 1,
                                           "resnet50", "backbone.body")
fasterrcnn_mobilenet_v3_large_fpn = DetectionNetwork(
    "fasterrcnn_mobilenet_v3_large_fpn", "Faster R-CNN, MobileNet V3 (large) FPN", 1,
    "mobilenet_v3", "backbone.body")
retinanet_resnet50_fpn = DetectionNetwork("retinanet_resnet50_fpn", "RetinaNet, ResNet-50 FPN", 0,
                                          "resnet50", "backbone.body")
fcos_resnet50_fpn = DetectionNetwork("fcos_resnet50_fpn", "FCOS, ResNet-50 FPN", 0, "resnet50", "backbone.body")
ssdlite320_mobilenet_v3_large = DetectionNetwork(
    "ssdlite320_mobilenet_v3_large", "SSDlite 320, MobileNet V3 (large)", 1, "mobilenet_v3",
    "backbone.features", backbone_unfit="its backbone is torchvision's reduced-tail MobileNet V3 (narrower last "
    "blocks), which ImageNet weights do not fit: fine-tune it from a previous detection job "
    "(--pretrained JOB), or choose fasterrcnn_mobilenet_v3_large_fpn")
