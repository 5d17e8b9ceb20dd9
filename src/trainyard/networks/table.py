"""The standard networks: one registry, each entry its NetworkInfo and its builder's path.

An entry's builder is a ``"module:attr"`` string (timm's ``OptimInfo`` with a class path is the
model), imported only when a network is built (``load_builder``). So spec validation, the CLI's
help and the new-model form look names up here without loading torch (seconds and hundreds of
MB), and a process builds only what it uses: importing torchvision or timm is paid by the first
network that needs them. A builder is ``build(num_classes, in_channels, image_size) -> nn.Module``,
the signature of a custom network file; one with a ``source()`` method gives the text of an
equivalent custom file, otherwise its module file is that text (registry.py).

Names with a family prefix (``timm:<model>``) are not registered: timm has over a thousand. Looking
one up imports that family's module, and with it torch and timm; only those names pay for it.
Checking that one exists (`check_network_name`) reads timm's names from a cache file instead.
"""

from __future__ import annotations

import importlib
from functools import reduce
from typing import Any

from trainyard.core.registry import Registry
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK

from .info import TIMM_PREFIX, NetworkInfo, UnknownNetwork

# How the error message names the untabled families (each resolved by its module: `family`;
# timm_detection.HEADS are the detector heads)
FAMILIES = [f"{TIMM_PREFIX}<model>", *(f"{h}:{TIMM_PREFIX}<model>" for h in ("fasterrcnn", "retinanet", "fcos"))]

_TORCHVISION = "torchvision.models"
_ZOO = "trainyard.networks.zoo"
_DETECTION = "trainyard.networks.detection"
_TV_DETECTION = "torchvision.models.detection"
_YOLO = "trainyard.networks.yolo"
_SEGMENTATION = "trainyard.networks.segmentation"

# How the YOLO family trains where the user says nothing else: AdamW, a warm-up then a cosine
# decay, a moving average of the weights validated and saved (training/ema.py), and the field's
# box-aware augmentations (mosaic, off for the last 30 % of training; flips, random scale and
# translation; HSV). Percentages, not epochs: the recipe holds for any --epochs.
YOLO_RECIPE: tuple[tuple[str, Any], ...] = (
    ("solver", "adamw"),
    ("weight_decay", 0.0005),
    ("momentum", 0.9),
    ("ema", 0.9999),
    ("lr", {"policy": "cosine", "base_lr": 0.002, "warmup_percent": 10.0, "warmup_start_factor": 0.1}),
    ("augment", {"flip": "lr", "scale_jitter": 0.5, "hue_shift": 0.015, "saturation_shift": 0.7,
                 "value_shift": 0.4, "mosaic": 1.0, "mosaic_off_percent": 30.0}),
)

# How a segmenter trains where the user says nothing else: Adam from 1e-3 down a half cosine, no
# weight decay. The classifiers' default (SGD 0.01, divided by 10 at each third of training) left
# a U-Net from scratch stuck at the LR's first step: on bench/segmentation/segmentation.py's shapes (15 epochs,
# 64x64) test mIoU 0.38, against 0.51 with this recipe (docs/segmentation.md). At a fixed 1e-3 the
# validation mIoU jumped by up to 0.15 from one epoch to the next; the cosine ends on a settled one.
SEGMENTATION_RECIPE: tuple[tuple[str, Any], ...] = (
    ("solver", "adam"),
    ("weight_decay", 0.0),
    ("lr", {"policy": "cosine", "base_lr": 0.001}),
)

# name -> the builder's "module:attr" path, with the network's NetworkInfo as the entry's info.
STANDARD: Registry[str] = Registry("network", error=UnknownNetwork)


def register_network(info: NetworkInfo, builder: str, *, replace: bool = False) -> NetworkInfo:
    """Add a standard network: what it is (``info``) and where its builder is (``"module:attr"``)."""
    module, colon, attr = builder.partition(":")
    if not (module and colon and attr):
        raise ValueError(f"builder {builder!r} should be a path \"package.module:attribute\"")
    STANDARD.register(info.name, builder, info=info, replace=replace)
    return info


def builder_modules() -> list[str]:
    """The modules the standard networks' builders live in (a warm checker imports them first)."""
    return sorted({path.partition(":")[0] for path in STANDARD.list()})


def load_builder(path: str) -> Any:
    """The object a ``"module:attr"`` path names (``attr`` may be dotted), imported now."""
    module, _, attr = path.partition(":")
    return reduce(getattr, attr.split("."), importlib.import_module(module))


for _info, _builder in (
    # DIGITS's three come first: lists and the form show them first.
    (NetworkInfo("lenet", "LeNet (DIGITS): two convolutions, for small grayscale images like MNIST (28x28).",
                 image_size=28, batch_size=64, source_module="trainyard.networks.lenet", min_image_size=16),
     "trainyard.networks.lenet:build"),
    (NetworkInfo("alexnet", "AlexNet (DIGITS/Caffe layout with LRN): 227x227 crops of 256x256 images.",
                 image_size=227, batch_size=128, source_module="trainyard.networks.alexnet", min_image_size=63),
     "trainyard.networks.alexnet:build"),
    (NetworkInfo("googlenet", "GoogLeNet / Inception v1 (DIGITS) with batch norm and both auxiliary "
                 "classifiers; 224x224.",
                 image_size=224, batch_size=32, source_module="trainyard.networks.googlenet", min_image_size=32),
     "trainyard.networks.googlenet:build"),
    (NetworkInfo("resnet18", "ResNet-18 (torchvision): residual network, a fast strong baseline.",
                 image_size=224, batch_size=64, source_module=_TORCHVISION), f"{_ZOO}:resnet18"),
    (NetworkInfo("resnet50", "ResNet-50 (torchvision): deeper residual network with bottleneck blocks.",
                 image_size=224, batch_size=32, source_module=_TORCHVISION), f"{_ZOO}:resnet50"),
    (NetworkInfo("vgg16", "VGG-16 (torchvision): plain 3x3 convolutions; large (138M parameters).",
                 image_size=224, batch_size=32, source_module=_TORCHVISION), f"{_ZOO}:vgg16"),
    (NetworkInfo("mobilenet_v3", "MobileNet V3 large (torchvision): small and fast, for mobile and embedded "
                 "deployment.", image_size=224, batch_size=64, source_module=_TORCHVISION), f"{_ZOO}:mobilenet_v3"),
    (NetworkInfo("efficientnet_b0", "EfficientNet-B0 (torchvision): accurate for its size.",
                 image_size=224, batch_size=64, source_module=_TORCHVISION), f"{_ZOO}:efficientnet_b0"),
    (NetworkInfo("convnext_tiny", "ConvNeXt-Tiny (torchvision): modern convolutional network.",
                 image_size=224, batch_size=32, source_module=_TORCHVISION), f"{_ZOO}:convnext_tiny"),
    (NetworkInfo("vit_b_16", "Vision Transformer B/16 (torchvision): image size must be a multiple of 16; "
                 "needs much data.", image_size=224, batch_size=32, source_module=_TORCHVISION), f"{_ZOO}:vit_b_16"),
    # Detectors (task "detection": they train on detection datasets only). Batch sizes suit a CPU.
    (NetworkInfo("fasterrcnn_resnet50_fpn", "Faster R-CNN, ResNet-50 FPN (torchvision): two-stage detector, "
                 "accurate.", image_size=512, batch_size=4, source_module=_TV_DETECTION, min_image_size=32,
                 task="detection"), f"{_DETECTION}:fasterrcnn_resnet50_fpn"),
    (NetworkInfo("fasterrcnn_mobilenet_v3_large_fpn", "Faster R-CNN, MobileNet V3 FPN (torchvision): a "
                 "lighter two-stage detector.", image_size=320, batch_size=8, source_module=_TV_DETECTION,
                 min_image_size=32, task="detection"), f"{_DETECTION}:fasterrcnn_mobilenet_v3_large_fpn"),
    (NetworkInfo("retinanet_resnet50_fpn", "RetinaNet, ResNet-50 FPN (torchvision): one-stage detector with "
                 "focal loss.", image_size=512, batch_size=4, source_module=_TV_DETECTION, min_image_size=32,
                 task="detection"), f"{_DETECTION}:retinanet_resnet50_fpn"),
    (NetworkInfo("fcos_resnet50_fpn", "FCOS, ResNet-50 FPN (torchvision): anchor-free one-stage detector.",
                 image_size=512, batch_size=4, source_module=_TV_DETECTION, min_image_size=32,
                 task="detection"), f"{_DETECTION}:fcos_resnet50_fpn"),
    (NetworkInfo("ssdlite320_mobilenet_v3_large", "SSDlite, MobileNet V3 (torchvision): small, fast "
                 "detector for mobile and embedded deployment.", image_size=320, batch_size=16,
                 source_module=_TV_DETECTION, min_image_size=32, task="detection"),
     f"{_DETECTION}:ssdlite320_mobilenet_v3_large"),
    # The YOLO family (networks/yolo): one-stage, anchor-free, trainyard's own code. Pads its
    # input to a multiple of 32 inside, so any stored size trains.
    *((NetworkInfo(f"yolo_{size}", f"YOLO {size} (trainyard): one-stage anchor-free detector, CSP backbone, "
                   f"PAN neck, decoupled DFL head, task-aligned assignment; {note}.", image_size=320,
                   batch_size=batch, source_module=_YOLO, min_image_size=32, task="detection",
                   recipe=YOLO_RECIPE), f"{_YOLO}:yolo_{size}")
      for size, batch, note in (("n", 16, "3 M parameters, the fastest"), ("s", 16, "11 M parameters"),
                                ("m", 8, "26 M parameters, the most accurate"))),
    # Segmenters (task "segmentation": index masks): segmentation-models-pytorch on a ResNet-18
    # encoder, and torchvision's LR-ASPP, DeepLabV3 and FCN. smp's need a side that is a multiple of 32.
    *((NetworkInfo(name, description, image_size=256, batch_size=8, source_module=_SEGMENTATION,
                   min_image_size=32, task="segmentation", recipe=SEGMENTATION_RECIPE), f"{_SEGMENTATION}:{name}")
      for name, description in (
          ("unet_resnet18", "U-Net, ResNet-18 encoder (segmentation-models-pytorch): learns fast from scratch; "
                            "image sides a multiple of 32."),
          ("fpn_resnet18", "FPN, ResNet-18 encoder (segmentation-models-pytorch): image sides a multiple of 32."),
          ("deeplabv3plus_resnet18", "DeepLabV3+, ResNet-18 encoder (segmentation-models-pytorch): atrous "
                                     "context; image sides a multiple of 16."),
          ("lraspp_mobilenet_v3_large", "LR-ASPP, MobileNet V3 (torchvision): small and fast; slow to leave "
                                        "the background from scratch."),
          ("deeplabv3_mobilenet_v3_large", "DeepLabV3, MobileNet V3 (torchvision): atrous spatial pyramid "
                                           "pooling for objects of many sizes at a mobile network's cost."),
          ("fcn_resnet50", "FCN, ResNet-50 (torchvision): the fully convolutional network DIGITS segmented "
                           "with; large (33 M parameters) and slow on a CPU, for a GPU."))),
):
    register_network(_info, _builder)


def list_networks() -> list[NetworkInfo]:
    """All standard networks, in registration order (the DIGITS three first)."""
    return STANDARD.infos()


def is_standard(name: object) -> bool:
    return isinstance(name, str) and name in STANDARD


def family(name: object) -> Any:
    """The module that resolves ``name``'s untabled family, or None: timm_networks for
    ``timm:<model>``, timm_detection for ``<head>:timm:<model>``. Each has ``check_name(name)``
    (from timm's cached names, torch-free) and ``resolve(name) -> (info, build, source)``."""
    if not isinstance(name, str) or TIMM_PREFIX not in name:
        return None  # a tabled or unknown name: neither module is imported
    from . import timm_detection, timm_networks  # torch-free until a name is resolved

    if timm_detection.is_name(name):
        return timm_detection
    return timm_networks if name.startswith(TIMM_PREFIX) else None


def detector_of(name: str | None) -> Any:
    """The detector ``name`` names (a tabled one, detection.py's DetectionNetwork, or a head on a
    timm backbone, timm_detection's), telling its backbone network and where it sits; None for
    any other name. Torch-free."""
    from .detection import detection_network

    resolver = family(name)
    if resolver is not None and task_traits(resolver.TASK).boxes:
        return resolver.network(name)
    return detection_network(name)


def get_network(name: str) -> NetworkInfo:
    """The NetworkInfo for `name` (a standard network, or resolved such as ``timm:<model>``);
    UnknownNetwork (a NotFound, so a ValueError) if there is none, suggesting the closest name."""
    if is_standard(name):
        info: NetworkInfo = STANDARD.info(name)
        return info
    resolver = family(name)
    if resolver is not None:  # resolving imports timm (and torch): these names only
        found: NetworkInfo = resolver.resolve(name)[0]
        return found
    raise UnknownNetwork("network", name, STANDARD.names() + FAMILIES)


def network_task(name: str) -> str:
    """What network ``name`` trains on (classification, detection), from its name: a family's
    task is its module's (timm models are classifiers), so no timm or torch is loaded."""
    if is_standard(name):
        return get_network(name).task
    resolver = family(name)
    return resolver.TASK if resolver is not None else DEFAULT_TASK


def check_network_name(name: str) -> None:
    """Refuse (UnknownNetwork) a name that is neither standard nor of a family whose model timm
    has, from the names alone: a ``timm:`` name is checked against timm's cached list, not
    resolved (which reads its config with timm, and torch)."""
    if is_standard(name):
        return
    resolver = family(name)
    if resolver is None:
        raise UnknownNetwork("network", name, STANDARD.names() + FAMILIES)
    resolver.check_name(name)
