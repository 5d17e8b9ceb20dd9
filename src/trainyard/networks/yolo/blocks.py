"""The YOLO family's body: a CSP backbone (C2f stages, SPPF) and a PAN neck, sized by two multipliers.

Written for trainyard from the published designs (CSPNet's split-and-merge stages, YOLOv4/v5's
spatial pyramid pooling, PANet's top-down then bottom-up fusion); ``width`` scales the channels
and ``depth`` the number of bottlenecks in a stage, which is how n / s / m differ. The body
returns three feature maps at strides 8, 16 and 32 for the head.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class ConvBNAct(nn.Module):
    """Convolution, batch norm, SiLU: the unit everything here is built from."""

    def __init__(self, c_in: int, c_out: int, k: int = 1, s: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
        # A small momentum: a detector's batches are small and its statistics noisy
        self.bn = nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    """Two 3x3 convolutions, with a residual connection where asked."""

    def __init__(self, c: int, shortcut: bool):
        super().__init__()
        self.cv1, self.cv2 = ConvBNAct(c, c, 3), ConvBNAct(c, c, 3)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.shortcut else y


class C2f(nn.Module):
    """A CSP stage: split the channels in two, run bottlenecks on one half, and concatenate every
    intermediate output (more gradient paths for the cost of one 1x1 convolution)."""

    def __init__(self, c_in: int, c_out: int, n: int, shortcut: bool = True):
        super().__init__()
        self.hidden = c_out // 2
        self.cv1 = ConvBNAct(c_in, 2 * self.hidden)
        self.cv2 = ConvBNAct((2 + n) * self.hidden, c_out)
        self.blocks = nn.ModuleList(Bottleneck(self.hidden, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(self.cv1(x).split(self.hidden, 1))
        for block in self.blocks:
            parts.append(block(parts[-1]))
        return self.cv2(torch.cat(parts, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max-pools give 5, 9 and 13 receptive fields."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.cv1 = ConvBNAct(c_in, c_in // 2)
        self.cv2 = ConvBNAct(c_in * 2, c_out)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        a = self.pool(x)
        b = self.pool(a)
        return self.cv2(torch.cat([x, a, b, self.pool(b)], 1))


def _ch(c: int, width: float, max_channels: int) -> int:
    """Channels scaled by ``width``, capped, rounded up to a multiple of 8."""
    return int(math.ceil(min(c, max_channels) * width / 8) * 8)


def _n(n: int, depth: float) -> int:
    return max(round(n * depth), 1)


class Body(nn.Module):
    """Backbone and neck: image (N, C, H, W) -> [P3, P4, P5] at strides 8, 16, 32."""

    def __init__(self, in_channels: int, width: float, depth: float, max_channels: int):
        super().__init__()
        c1, c2, c3, c4, c5 = (_ch(c, width, max_channels) for c in (64, 128, 256, 512, 1024))
        self.stem = nn.Sequential(ConvBNAct(in_channels, c1, 3, 2), ConvBNAct(c1, c2, 3, 2),
                                  C2f(c2, c2, _n(3, depth)))
        self.down3 = nn.Sequential(ConvBNAct(c2, c3, 3, 2), C2f(c3, c3, _n(6, depth)))
        self.down4 = nn.Sequential(ConvBNAct(c3, c4, 3, 2), C2f(c4, c4, _n(6, depth)))
        self.down5 = nn.Sequential(ConvBNAct(c4, c5, 3, 2), C2f(c5, c5, _n(3, depth)), SPPF(c5, c5))
        n = _n(3, depth)
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.top4 = C2f(c5 + c4, c4, n, shortcut=False)  # top-down: P5 into P4, then P3
        self.top3 = C2f(c4 + c3, c3, n, shortcut=False)
        self.reduce3 = ConvBNAct(c3, c3, 3, 2)  # bottom-up: P3 back into P4, then P5
        self.bottom4 = C2f(c3 + c4, c4, n, shortcut=False)
        self.reduce4 = ConvBNAct(c4, c4, 3, 2)
        self.bottom5 = C2f(c4 + c5, c5, n, shortcut=False)
        self.channels = (c3, c4, c5)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        p3 = self.down3(self.stem(x))
        p4 = self.down4(p3)
        p5 = self.down5(p4)
        t4 = self.top4(torch.cat([self.up(p5), p4], 1))
        t3 = self.top3(torch.cat([self.up(t4), p3], 1))
        b4 = self.bottom4(torch.cat([self.reduce3(t3), t4], 1))
        b5 = self.bottom5(torch.cat([self.reduce4(b4), p5], 1))
        return [t3, b4, b5]
