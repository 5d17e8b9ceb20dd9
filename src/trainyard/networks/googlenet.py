"""GoogLeNet (Inception v1), as in DIGITS's standard networks, with both auxiliary classifiers.

The layout follows the paper and Caffe's bvlc_googlenet (224x224 crops, 5x5 convolutions in the
third branch, pooling that rounds up). Each convolution is followed by batch normalisation
instead of the original local response normalisation, so the network trains from scratch with
PyTorch's default initialisation.

In training mode forward() returns (logits, aux1, aux2): the auxiliary heads after inception 4a
and 4d. trainyard adds their cross-entropy weighted by `aux_loss_weights` (0.3 each, as in the
paper). In eval mode forward() returns the logits only and the auxiliary heads are not run.

This file imports only torch and works as a trainyard custom network file: copy it, edit it,
keep a `build(num_classes, in_channels, image_size)` function that returns an nn.Module.
"""

import torch
from torch import nn


class ConvBlock(nn.Module):
    """Convolution -> batch norm -> ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class Inception(nn.Module):
    """Four parallel branches concatenated on channels: 1x1 | 1x1,3x3 | 1x1,5x5 | pool,1x1."""

    def __init__(self, in_ch: int, ch1: int, ch3red: int, ch3: int, ch5red: int, ch5: int, pool_proj: int):
        super().__init__()
        self.in_channels = in_ch
        self.out_channels = ch1 + ch3 + ch5 + pool_proj
        self.branch1 = ConvBlock(in_ch, ch1, 1)
        self.branch2 = nn.Sequential(ConvBlock(in_ch, ch3red, 1), ConvBlock(ch3red, ch3, 3, padding=1))
        self.branch3 = nn.Sequential(ConvBlock(in_ch, ch5red, 1), ConvBlock(ch5red, ch5, 5, padding=2))
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            ConvBlock(in_ch, pool_proj, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branches = (self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x))
        return torch.cat(branches, dim=1)

    def extra_repr(self) -> str:
        return f"{self.in_channels}→{self.out_channels}"


class AuxHead(nn.Module):
    """Auxiliary classifier: pool to 4x4 -> 1x1 conv 128 -> fc 1024 -> dropout 0.7 -> fc."""

    def __init__(self, in_channels: int, num_classes: int):
        super().__init__()
        # Adaptive instead of Caffe's avg-pool 5/3: the same 4x4 at 224, and smaller inputs work.
        self.pool = nn.AdaptiveAvgPool2d((4, 4))
        self.conv = ConvBlock(in_channels, 128, 1)
        self.fc1 = nn.Linear(128 * 4 * 4, 1024)
        self.relu = nn.ReLU(inplace=True)
        self.dropout = nn.Dropout(0.7)
        self.fc2 = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.conv(self.pool(x)), 1)
        return self.fc2(self.dropout(self.relu(self.fc1(x))))


class GoogLeNet(nn.Module):
    aux_loss_weights = (0.3, 0.3)  # weights of aux1 and aux2 in the training loss

    def __init__(self, num_classes: int = 1000, in_channels: int = 3, dropout: float = 0.4):
        super().__init__()
        self.conv1 = ConvBlock(in_channels, 64, 7, stride=2, padding=3)  # 224 -> 112
        self.pool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)  # -> 56
        self.conv2 = ConvBlock(64, 64, 1)
        self.conv3 = ConvBlock(64, 192, 3, padding=1)
        self.pool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)  # -> 28
        self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
        self.pool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)  # -> 14
        self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
        self.pool4 = nn.MaxPool2d(3, stride=2, ceil_mode=True)  # -> 7
        self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
        self.aux1 = AuxHead(512, num_classes)
        self.aux2 = AuxHead(528, num_classes)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor):
        x = self.pool2(self.conv3(self.conv2(self.pool1(self.conv1(x)))))
        x = self.pool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        aux1 = self.aux1(x) if self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.training else None
        x = self.pool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        logits = self.fc(self.dropout(torch.flatten(self.avgpool(x), 1)))
        if self.training:
            return logits, aux1, aux2
        return logits


def build(num_classes: int, in_channels: int, image_size: int) -> nn.Module:
    """Entry point trainyard calls: a GoogLeNet for `num_classes` classes."""
    return GoogLeNet(num_classes=num_classes, in_channels=in_channels)
