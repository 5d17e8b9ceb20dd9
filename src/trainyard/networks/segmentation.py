"""Semantic segmentation networks: segmentation-models-pytorch's U-Net, FPN and DeepLabV3+ on a
ResNet-18 encoder, and torchvision's LR-ASPP and DeepLabV3 on MobileNet V3 and FCN on ResNet-50
(issue 43), without their auxiliary classifiers.

Each builder has the custom network signature ``build(num_classes, in_channels, image_size)`` and
returns a module whose forward maps (N, C, H, W) images to (N, num_classes, H, W) logits, one
tensor (torchvision's dict answer is unwrapped), so the loss, the metrics, inference and ONNX
export treat every segmenter alike. Encoders start from scratch here; the pretrained store is not
wired for segmentation yet.
"""

from __future__ import annotations

from torch import Tensor, nn

SMP_ENCODER = "resnet18"


class Segmenter(nn.Module):
    """A segmentation network whose answer is its logits tensor (a dict's ``"out"`` taken)."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x: Tensor) -> Tensor:
        out = self.net(x)
        return out["out"] if isinstance(out, dict) else out


def _smp(arch: str, num_classes: int, in_channels: int) -> nn.Module:
    import segmentation_models_pytorch as smp

    make = {"unet": smp.Unet, "fpn": smp.FPN, "deeplabv3plus": smp.DeepLabV3Plus}[arch]
    return Segmenter(make(encoder_name=SMP_ENCODER, encoder_weights=None, in_channels=in_channels,
                          classes=num_classes))


def unet_resnet18(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    return _smp("unet", num_classes, in_channels)


def fpn_resnet18(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    return _smp("fpn", num_classes, in_channels)


def deeplabv3plus_resnet18(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    return _smp("deeplabv3plus", num_classes, in_channels)


def _first_conv_takes(parent: nn.Module, name: str, in_channels: int) -> None:
    """Replace ``parent``'s first convolution ``name`` by one of ``in_channels`` inputs (a grey
    dataset's one channel); torchvision's segmenters are built for RGB."""
    if in_channels == 3:
        return
    first = getattr(parent, name)
    setattr(parent, name, nn.Conv2d(in_channels, first.out_channels, first.kernel_size, first.stride,
                                    first.padding, bias=False))


def lraspp_mobilenet_v3_large(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large as make

    net = make(weights=None, weights_backbone=None, num_classes=num_classes)
    _first_conv_takes(net.backbone["0"], "0", in_channels)
    return Segmenter(net)


def deeplabv3_mobilenet_v3_large(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large as make

    # no auxiliary classifier: the loss (training/segmentation/steps.py) reads the one answer
    net = make(weights=None, weights_backbone=None, num_classes=num_classes, aux_loss=False)
    _first_conv_takes(net.backbone["0"], "0", in_channels)
    return Segmenter(net)


def fcn_resnet50(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:
    from torchvision.models.segmentation import fcn_resnet50 as make

    net = make(weights=None, weights_backbone=None, num_classes=num_classes, aux_loss=False)
    _first_conv_takes(net.backbone, "conv1", in_channels)
    return Segmenter(net)


def _as_file(builder) -> None:
    """Give ``builder`` a ``source()``: this module's text with a ``build`` calling it, a stand-alone
    custom network file (what an archive's network.py ships, registry.py)."""
    def source() -> str:
        from pathlib import Path

        text = Path(__file__).read_text(encoding="utf-8")
        return (f"{text}\n\ndef build(num_classes: int, in_channels: int = 3, image_size: int = 256) -> nn.Module:\n"
                f"    return {builder.__name__}(num_classes, in_channels, image_size)\n")

    builder.source = source


for _builder in (unet_resnet18, fpn_resnet18, deeplabv3plus_resnet18, lraspp_mobilenet_v3_large,
                 deeplabv3_mobilenet_v3_large, fcn_resnet50):
    _as_file(_builder)
