"""inspect_network: per-layer shapes, parameter counts, tree structure and settings."""

import torch
from torch import nn

from trainyard.networks import create_network, inspect_network


def test_lenet_layers_shapes_and_params():
    model = create_network("lenet", 10, 1)
    report = inspect_network(model, (1, 28, 28))
    layers = {layer["name"]: layer for layer in report["layers"]}
    assert layers["features.0"]["output_shape"] == [20, 24, 24]
    assert layers["features.1"]["output_shape"] == [20, 12, 12]
    assert layers["features.2"]["output_shape"] == [50, 8, 8]
    assert layers["features.3"]["output_shape"] == [50, 4, 4]
    assert layers["classifier.1"]["output_shape"] == [500]
    assert layers["features.0"]["params"] == 20 * 25 + 20
    assert layers["classifier.1"]["params"] == 800 * 500 + 500
    assert layers["features.0"]["settings"] == "1→20, k=5, s=1, p=0, bias=True"
    assert layers["classifier.1"]["settings"] == "800→500, bias=True"
    total = sum(p.numel() for p in model.parameters())
    assert report["params"] == total == 431080
    assert sum(layer["params"] for layer in report["layers"]) == total
    assert report["trainable_params"] == total
    assert report["input_shape"] == [1, 28, 28] and report["output_shape"] == [10]


def test_containers_come_before_their_children_with_depth_and_parent():
    report = inspect_network(create_network("lenet", 10, 1), (1, 28, 28))
    names = [layer["name"] for layer in report["layers"]]
    assert names.index("features") < names.index("features.0")
    features = report["layers"][names.index("features")]
    child = report["layers"][names.index("features.2")]
    assert (features["depth"], features["parent"], features["leaf"]) == (0, "", False)
    assert (child["depth"], child["parent"], child["leaf"]) == (1, "features", True)
    assert features["params_total"] == 20 * 25 + 20 + 50 * 20 * 25 + 50


def test_googlenet_branches_and_skipped_aux_heads():
    model = create_network("googlenet", 4)
    model.train()
    report = inspect_network(model, (3, 64, 64))
    assert model.training  # restored after the eval-mode pass
    layers = {layer["name"]: layer for layer in report["layers"]}
    branches = [n for n, layer in layers.items() if layer["parent"] == "inception3a"]
    assert branches == [f"inception3a.branch{i}" for i in range(1, 5)]
    assert layers["inception3a"]["output_shape"][0] == 256
    assert layers["inception3a"]["settings"] == "192→256"
    # Eval mode skips the auxiliary heads: listed without a shape, their weights still counted.
    assert layers["aux1"]["output_shape"] is None
    assert sum(layer["params"] for layer in report["layers"]) == sum(p.numel() for p in model.parameters())


def test_frozen_layers_and_parameters_held_by_containers():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))  # held by the root module itself
            self.body = nn.Sequential(nn.Conv2d(3, 2, 1), nn.Flatten(), nn.Linear(8, 2))
            self.body[0].requires_grad_(False)

        def forward(self, x):
            return self.body(x * self.scale)

    report = inspect_network(Net(), (3, 2, 2))
    layers = {layer["name"]: layer for layer in report["layers"]}
    assert layers["body.0"]["trainable"] is False and layers["body.2"]["trainable"] is True
    assert report["params"] == 1 + 8 + 18
    assert report["trainable_params"] == 1 + 18
