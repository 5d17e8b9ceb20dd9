"""A fine-tune's BatchNorm statistics are recomputed for its current weights before every
validation and checkpoint: what it validates and saves normalises with its own statistics, frozen
layers keep theirs, and a resumed fine-tune continues bit for bit."""

from __future__ import annotations

import torch
from model_helpers import make_dataset, model_spec, train_and_resume
from torch import nn

from trainyard.datasets.storage import open_split
from trainyard.training.data import BatchLoader
from trainyard.training.transfer import keep_frozen_batchnorm_in_eval, recalibrate_batchnorm, refresh_batchnorm

BN_NET = (
    "from torch import nn\n"
    "def build(num_classes, in_channels, image_size):\n"
    "    return nn.Sequential(nn.Conv2d(in_channels, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(2),\n"
    "                         nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, num_classes))\n"
)


def pretrained_file(path, in_channels: int = 1):
    """Weights for BN_NET with another class count (its classifier is made anew) and
    BatchNorm statistics made for other inputs."""
    torch.manual_seed(5)
    net = nn.Sequential(nn.Conv2d(in_channels, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                        nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, 7))
    net[1].running_mean.fill_(3.0)
    net[1].running_var.fill_(50.0)
    torch.save(net.state_dict(), path)
    return path


def test_a_resumed_fine_tune_is_exact_and_saves_the_statistics_of_its_weights(tmp_path):
    dataset = make_dataset(tmp_path / "ds", train=96, val=16, size=18)
    spec = model_spec(dataset, network=None, network_source=BN_NET, pretrained=str(pretrained_file(tmp_path / "w.pt")),
                      epochs=2, snapshot_interval=0.5, val_interval=1, augment={"flip": "both"},
                      lr={"policy": "step", "base_lr": 0.05, "step_percent": 40, "gamma": 0.5})
    final, resumed = train_and_resume(spec, tmp_path)  # from 1.5: a checkpoint without a validation
    assert ("running statistics of 1 BatchNorm layers are recomputed on 96 training images before every "
            "validation and checkpoint") in (tmp_path / "full" / "log.txt").read_text()
    assert all(torch.equal(v, resumed["model"][k]) for k, v in final["model"].items())
    # The saved statistics are those of the saved weights on the training images (recomputing
    # them changes nothing), not a running average still half made of the starting weights'.
    net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                        nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, 2))
    net.load_state_dict(final["model"])
    mean = torch.as_tensor(final["preprocess"]["mean"]).permute(2, 0, 1)[None] / 255
    loader = BatchLoader(open_split(dataset, "train"), 16, mean=mean)
    recalibrate_batchnorm(net, loader)
    assert torch.allclose(net[1].running_mean, final["model"]["1.running_mean"], atol=1e-6)
    assert torch.allclose(net[1].running_var, final["model"]["1.running_var"], rtol=1e-5)
    assert not torch.allclose(final["model"]["1.running_mean"], torch.full((8,), 3.0))


class Loader:
    """The part of BatchLoader recalibration uses."""

    batch_size = 8

    def __init__(self, x: torch.Tensor):
        self.x = x

    def batches(self, epoch: int, start: int, stop: int):
        for i in range(start, min(stop, -(-len(self.x) // self.batch_size))):
            yield self.x[i * self.batch_size:(i + 1) * self.batch_size], None


def test_a_refresh_recomputes_trainable_batchnorm_and_leaves_frozen_layers_alone():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4))
    for m in net[1], net[3]:
        m.running_mean.fill_(5.0)
    for p in net[:2].parameters():
        p.requires_grad_(False)
    keep_frozen_batchnorm_in_eval(net)
    x = torch.rand(16, 3, 6, 6)
    refresh_batchnorm(net, Loader(x))
    assert torch.equal(net[1].running_mean, torch.full((4,), 5.0))  # frozen: as it was
    with torch.no_grad():
        features = net[2](net[1](net[0](x)))
    assert torch.allclose(net[3].running_mean, features.mean(dim=(0, 2, 3)), atol=1e-5)
    refresh_batchnorm(net, None)  # nothing to refresh: nothing happens
    assert torch.allclose(net[3].running_mean, features.mean(dim=(0, 2, 3)), atol=1e-5)
