"""torchvision's DeepLabV3 (MobileNet V3) and FCN (ResNet-50) as standard segmenters: listed for
the segmentation task, built from scratch with no download and no auxiliary classifier, they
answer one logit per class and pixel for grey and colour images and train a step on the loss."""

from __future__ import annotations

import pytest
import torch

from trainyard.networks.registry import create_network, network_source
from trainyard.networks.table import list_networks
from trainyard.training.segmentation.steps import segmentation_loss

NAMES = ("deeplabv3_mobilenet_v3_large", "fcn_resnet50")


@pytest.fixture(autouse=True)
def no_download(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a segmenter tried to download weights")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)


def test_they_are_listed_as_segmenters_saying_what_each_is_for():
    listed = {info.name: info for info in list_networks()}
    for name in NAMES:
        assert listed[name].task == "segmentation"
    assert "pyramid" in listed["deeplabv3_mobilenet_v3_large"].description
    assert "DIGITS" in listed["fcn_resnet50"].description


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_answers_logits_per_class_and_pixel_and_trains_a_step(name):
    torch.manual_seed(0)
    colour = create_network(name, 4, 3, 32).eval()
    with torch.no_grad():
        assert colour(torch.rand(1, 3, 40, 48)).shape == (1, 4, 40, 48)
    model = create_network(name, 4, 1, 32)  # a grey dataset's: the first convolution takes one channel
    assert model.net.aux_classifier is None  # the loss reads one answer
    images, masks = torch.rand(2, 1, 40, 48), torch.randint(0, 4, (2, 40, 48))
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss, _ = segmentation_loss(model, images, masks)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    model.eval()
    with torch.no_grad():
        assert model(images).shape == (2, 4, 40, 48)


@pytest.mark.parametrize("name", NAMES)
def test_the_archive_source_builds_the_same_network(name):
    namespace: dict = {}
    exec(compile(network_source(name), f"{name}.py", "exec"), namespace)
    built = namespace["build"](3, 1, 32)
    assert sum(p.numel() for p in built.parameters()) == sum(
        p.numel() for p in create_network(name, 3, 1, 32).parameters())
