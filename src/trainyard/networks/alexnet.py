"""AlexNet, as in DIGITS's standard networks (Caffe's layout): 227x227 crops of 256x256 images.

Five convolutions with local response normalisation after the first two and grouped
convolutions (groups=2) where the original split the model over two GPUs, then three fully
connected layers with dropout. Pooling rounds up like Caffe's; an adaptive pool before the
classifier keeps the 6x6 grid at 227 (and at 224, or larger images) without changing weights.

This file imports only torch and works as a trainyard custom network file: copy it, edit it,
keep a `build(num_classes, in_channels, image_size)` function that returns an nn.Module.
"""

import torch
from torch import nn


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, in_channels: int = 3, dropout: float = 0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 96, kernel_size=11, stride=4),  # 227 -> 55
            nn.ReLU(inplace=True),
            nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),  # 55 -> 27
            nn.Conv2d(96, 256, kernel_size=5, padding=2, groups=2),
            nn.ReLU(inplace=True),
            nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),  # 27 -> 13
            nn.Conv2d(256, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 384, kernel_size=3, padding=1, groups=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1, groups=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),  # 13 -> 6
        )
        self.pool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(256 * 6 * 6, 4096),  # fc6
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(4096, 4096),  # fc7
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(4096, num_classes),  # fc8
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.pool(self.features(x)))


def build(num_classes: int, in_channels: int, image_size: int) -> nn.Module:
    """Entry point trainyard calls: an AlexNet for `num_classes` classes."""
    return AlexNet(num_classes=num_classes, in_channels=in_channels)
