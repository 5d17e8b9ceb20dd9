"""LeNet, as in DIGITS's standard networks: for small grayscale images such as MNIST (28x28).

conv 5x5/20 -> max-pool 2 -> conv 5x5/50 -> max-pool 2 -> fc 500 -> ReLU -> fc num_classes.

DIGITS's Caffe version scaled raw 0..255 pixels by 1/256 in its data layer; trainyard's loader
already hands networks 0..1 (mean-subtracted) tensors, so no scale layer is needed here.

This file imports only torch and works as a trainyard custom network file: copy it, edit it,
keep a `build(num_classes, in_channels, image_size)` function that returns an nn.Module.
"""

import torch
from torch import nn


class LeNet(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 1):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 20, kernel_size=5),  # 28 -> 24
            nn.MaxPool2d(kernel_size=2, stride=2),  # 24 -> 12
            nn.Conv2d(20, 50, kernel_size=5),  # 12 -> 8
            nn.MaxPool2d(kernel_size=2, stride=2),  # 8 -> 4
        )
        # A no-op at 28x28 input; lets larger (or slightly smaller) images through unchanged code.
        self.pool = nn.AdaptiveAvgPool2d((4, 4))
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(50 * 4 * 4, 500),
            nn.ReLU(inplace=True),
            nn.Linear(500, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.pool(self.features(x)))


def build(num_classes: int, in_channels: int, image_size: int) -> nn.Module:
    """Entry point trainyard calls: a LeNet for `num_classes` classes."""
    return LeNet(num_classes=num_classes, in_channels=in_channels)
