"""The table of standard networks: each one's NetworkInfo, without importing torch.

Spec validation, the CLI's help and the new-model form look names up here, so a process that
only creates or waits for a job never loads torch (seconds and hundreds of MB). The torch
builders register against these entries (registry.py); a builder without an entry here, or an
entry without a builder, is refused when the registry loads.

Names with a family prefix (``timm:<model>``) are not tabled: timm has over a thousand. Looking
one up imports that family's module, and with it torch and timm; only those names pay for it.
Checking that one exists (`check_network_name`) reads timm's names from a cache file instead.
"""

from __future__ import annotations

from trainyard.core.registry import Registry

from .info import TIMM_PREFIX, NetworkInfo, UnknownNetwork

FAMILIES = [f"{TIMM_PREFIX}<model>"]  # how the error message names the untabled families

_TORCHVISION = "torchvision.models"

STANDARD: Registry[NetworkInfo] = Registry("network", error=UnknownNetwork)
for _info in (
    # DIGITS's three come first: lists and the form show them first.
    NetworkInfo("lenet", "LeNet (DIGITS): two convolutions, for small grayscale images like MNIST (28x28).",
                image_size=28, batch_size=64, source_module="trainyard.networks.lenet", min_image_size=16),
    NetworkInfo("alexnet", "AlexNet (DIGITS/Caffe layout with LRN): 227x227 crops of 256x256 images.",
                image_size=227, batch_size=128, source_module="trainyard.networks.alexnet", min_image_size=63),
    NetworkInfo("googlenet", "GoogLeNet / Inception v1 (DIGITS) with batch norm and both auxiliary "
                "classifiers; 224x224.",
                image_size=224, batch_size=32, source_module="trainyard.networks.googlenet", min_image_size=32),
    NetworkInfo("resnet18", "ResNet-18 (torchvision): residual network, a fast strong baseline.",
                image_size=224, batch_size=64, source_module=_TORCHVISION),
    NetworkInfo("resnet50", "ResNet-50 (torchvision): deeper residual network with bottleneck blocks.",
                image_size=224, batch_size=32, source_module=_TORCHVISION),
    NetworkInfo("vgg16", "VGG-16 (torchvision): plain 3x3 convolutions; large (138M parameters).",
                image_size=224, batch_size=32, source_module=_TORCHVISION),
    NetworkInfo("mobilenet_v3", "MobileNet V3 large (torchvision): small and fast, for mobile and embedded "
                "deployment.", image_size=224, batch_size=64, source_module=_TORCHVISION),
    NetworkInfo("efficientnet_b0", "EfficientNet-B0 (torchvision): accurate for its size.",
                image_size=224, batch_size=64, source_module=_TORCHVISION),
    NetworkInfo("convnext_tiny", "ConvNeXt-Tiny (torchvision): modern convolutional network.",
                image_size=224, batch_size=32, source_module=_TORCHVISION),
    NetworkInfo("vit_b_16", "Vision Transformer B/16 (torchvision): image size must be a multiple of 16; "
                "needs much data.", image_size=224, batch_size=32, source_module=_TORCHVISION),
):
    STANDARD.register(_info.name, _info, info=_info)


def list_networks() -> list[NetworkInfo]:
    """All standard networks, in table order (the DIGITS three first)."""
    return STANDARD.list()


def is_standard(name: object) -> bool:
    return isinstance(name, str) and name in STANDARD


def get_network(name: str) -> NetworkInfo:
    """The NetworkInfo for `name` (a standard network, or resolved such as ``timm:<model>``);
    UnknownNetwork (a NotFound, so a ValueError) if there is none, suggesting the closest name."""
    if is_standard(name):
        return STANDARD.get(name)
    if isinstance(name, str) and name.startswith(TIMM_PREFIX):
        from . import timm_networks  # resolving imports timm (and torch): timm names only

        return timm_networks.resolve(name)[0]
    raise UnknownNetwork("network", name, STANDARD.names() + FAMILIES)


def check_network_name(name: str) -> None:
    """Refuse (UnknownNetwork) a name that is neither standard nor a model timm has, from the
    names alone: a ``timm:`` name is checked against timm's cached list, not resolved (which
    reads its config with timm, and torch)."""
    if is_standard(name):
        return
    if name.startswith(TIMM_PREFIX):
        from . import timm_networks

        timm_networks.check_name(name)
        return
    raise UnknownNetwork("network", name, STANDARD.names() + FAMILIES)
