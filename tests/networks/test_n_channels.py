"""Networks take the dataset's channel count, five as well as one or three: standard ones
(their first convolution replaced), timm's (``in_chans``), and pretrained weights adapted as
timm adapts them (a grey image gets the same response)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainyard.networks.registry import create_network
from trainyard.weights.fit import adapt_channels


def test_standard_and_timm_networks_take_five_channels():
    for name, size in (("resnet18", 32), ("timm:test_resnet", 32), ("lenet", 28)):
        model = create_network(name, 3, 5, size).eval()
        with torch.no_grad():
            assert model(torch.rand(2, 5, size, size)).shape == (2, 3), name


def test_pretrained_rgb_weights_adapted_to_more_channels_as_timm_does():
    weight = torch.randn(8, 3, 3, 3)
    # timm's rule: the RGB filters repeated over the channels, scaled by 3 / channels
    five = adapt_channels(weight, 5)
    torch.testing.assert_close(five, torch.cat([weight, weight[:, :2]], dim=1) * (3 / 5))
    # with a multiple of three channels a grey image gets exactly the RGB response
    grey = torch.rand(1, 1, 12, 12)
    rgb = F.conv2d(grey.expand(1, 3, 12, 12), weight)
    six = F.conv2d(grey.expand(1, 6, 12, 12), adapt_channels(weight, 6))
    torch.testing.assert_close(six, rgb, rtol=1e-5, atol=1e-5)
