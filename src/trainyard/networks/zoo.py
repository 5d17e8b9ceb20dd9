"""The torchvision networks' builders (DIGITS's three are builders in modules of their own).

Each standard network's entry in table.py names its builder here by path (``zoo:resnet18``);
this module loads, with torch, when the first of them is built. Torchvision models are always
built with weights=None (trainyard never downloads weights). For 1-channel datasets their first
convolution is replaced by an identical one with one input channel. Each builder also gives a
short stand-alone source file (the "Customize" button's starting point) that builds exactly
the same model.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn


def _pair(values: tuple[int, ...]) -> tuple[int, int]:
    return values[0], values[1]


def replace_first_conv(model: nn.Module, path: str, in_channels: int) -> None:
    """Swap the Conv2d at `path` (e.g. "features.0.0") for one taking `in_channels` inputs."""
    old = model.get_submodule(path)
    assert isinstance(old, nn.Conv2d), f"{path} is a {type(old).__name__}, not a Conv2d"
    # torch's stubs type _ConvNd's kernel_size/stride/padding as tuple[int, ...] for every
    # dimension, while Conv2d's constructor wants 2-tuples: a Conv2d's are 2-tuples.
    kernel, stride = _pair(old.kernel_size), _pair(old.stride)
    padding = old.padding if isinstance(old.padding, str) else _pair(old.padding)
    new = nn.Conv2d(in_channels, old.out_channels, kernel, stride=stride, padding=padding,
                    bias=old.bias is not None)
    parent, _, attr = path.rpartition(".")
    setattr(model.get_submodule(parent), attr, new)


def _build_torchvision(
    fn: str, first_conv: str, num_classes: int, in_channels: int, image_size: int
) -> nn.Module:
    import torchvision  # here, not at the top: it adds ~2 s to importing trainyard.networks

    kwargs = {}
    if fn == "vit_b_16":
        _check_vit_size(image_size)
        kwargs["image_size"] = image_size
    model = getattr(torchvision.models, fn)(weights=None, num_classes=num_classes, **kwargs)
    if in_channels != 3:
        replace_first_conv(model, first_conv, in_channels)
    return model


def _check_vit_size(image_size: int) -> None:
    if image_size % 16:
        raise ValueError(f"vit_b_16 needs an image size that is a multiple of 16, got {image_size}")


_SOURCE_TEMPLATE = '''"""{title} from torchvision (random initialisation) as a trainyard custom network.

Edit freely: trainyard calls build(num_classes, in_channels, image_size) and trains the module.
"""

import torchvision
from torch import nn

FIRST_CONV = "{first_conv}"  # replaced when the dataset is not 3-channel


def build(num_classes, in_channels, image_size):
{body}    if in_channels != 3:
        old = model.get_submodule(FIRST_CONV)
        new = nn.Conv2d(in_channels, old.out_channels, old.kernel_size,
                        stride=old.stride, padding=old.padding, bias=old.bias is not None)
        parent, _, attr = FIRST_CONV.rpartition(".")
        setattr(model.get_submodule(parent), attr, new)
    return model
'''

_PLAIN_BODY = "    model = torchvision.models.{fn}(weights=None, num_classes=num_classes)\n"
_VIT_BODY = (
    "    if image_size % 16:\n"
    '        raise ValueError(f"vit_b_16 needs an image size that is a multiple of 16, got {{image_size}}")\n'
    "    model = torchvision.models.{fn}(weights=None, num_classes=num_classes, image_size=image_size)\n"
)


@dataclass(frozen=True)
class TorchvisionNetwork:
    """A torchvision model as a builder: ``build(num_classes, in_channels, image_size)``."""

    torchvision: str  # its torchvision function; the weights catalogue reads its weight enums by it
    title: str
    first_conv: str  # the module path of its first convolution, replaced for other channel counts

    def __call__(self, num_classes: int, in_channels: int, image_size: int) -> nn.Module:
        return _build_torchvision(self.torchvision, self.first_conv, num_classes, in_channels, image_size)

    def source(self) -> str:
        """A stand-alone custom-network file that builds exactly the same model."""
        body = (_VIT_BODY if self.torchvision == "vit_b_16" else _PLAIN_BODY).format(fn=self.torchvision)
        return _SOURCE_TEMPLATE.format(title=self.title, first_conv=self.first_conv, body=body)


# The builders table.py names (sizes and descriptions are there).
resnet18 = TorchvisionNetwork("resnet18", "ResNet-18", "conv1")
resnet50 = TorchvisionNetwork("resnet50", "ResNet-50", "conv1")
vgg16 = TorchvisionNetwork("vgg16", "VGG-16", "features.0")
mobilenet_v3 = TorchvisionNetwork("mobilenet_v3_large", "MobileNet V3 (large)", "features.0.0")
efficientnet_b0 = TorchvisionNetwork("efficientnet_b0", "EfficientNet-B0", "features.0.0")
convnext_tiny = TorchvisionNetwork("convnext_tiny", "ConvNeXt-Tiny", "features.0.0")
vit_b_16 = TorchvisionNetwork("vit_b_16", "ViT-B/16", "conv_proj")
