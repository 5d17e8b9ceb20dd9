"""One registry of standard networks: each entry its NetworkInfo and its builder's import path.

Importing the registry imports no builder: torch, torchvision and timm load only when a network
that needs them is built. Each case runs in a fresh interpreter and reports what it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainyard.networks import NetworkInfo, create_network, list_networks, network_source
from trainyard.networks.table import STANDARD, load_builder, register_network

LOADED = """
import json, sys
WATCHED = ("torch", "torchvision", "timm", "trainyard.networks.lenet", "trainyard.networks.alexnet",
           "trainyard.networks.googlenet", "trainyard.networks.zoo", "trainyard.networks.timm_networks")
def loaded():
    return [m for m in WATCHED if m in sys.modules]
import trainyard.networks.registry as registry
steps = {"import": loaded(), "names": [i.name for i in registry.list_networks()]}
registry.get_network("resnet18")
steps["lookup"] = loaded()
registry.create_network("lenet", 10, 1)
steps["lenet"] = loaded()
registry.create_network("resnet18", 10, 3, 32)
steps["resnet18"] = loaded()
print(json.dumps(steps))
"""


@pytest.mark.slow
def test_importing_the_registry_imports_no_builder_until_one_is_used():
    done = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=300, check=True)
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    assert steps["import"] == [] and steps["lookup"] == []  # names and sizes: no torch at all
    assert "resnet18" in steps["names"]
    # LeNet is our own module: building it loads torch and that module, not torchvision or timm.
    assert set(steps["lenet"]) == {"torch", "trainyard.networks.lenet"}
    assert {"torchvision", "trainyard.networks.zoo"} <= set(steps["resnet18"])
    assert "timm" not in steps["resnet18"] and "trainyard.networks.alexnet" not in steps["resnet18"]


def test_every_entry_names_a_builder_that_exists():
    """The one check left in place of the old table/registry alignment: each path resolves."""
    assert [info.name for info in list_networks()] == STANDARD.names()
    for name in STANDARD:
        assert callable(load_builder(STANDARD.get(name))), name


def test_a_torchvision_builder_carries_its_function_and_source():
    builder = load_builder(STANDARD.get("mobilenet_v3"))
    assert builder.torchvision == "mobilenet_v3_large"
    assert "torchvision.models.mobilenet_v3_large(" in network_source("mobilenet_v3")
    assert network_source("lenet").startswith('"""') and "def build(" in network_source("lenet")


def test_a_network_registered_by_path_builds(tmp_path, monkeypatch):
    (tmp_path / "tiny_net.py").write_text(
        "from torch import nn\n\ndef build(num_classes, in_channels, image_size):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    info = NetworkInfo("tiny-test", "a test network", image_size=8, batch_size=4, source_module="tiny_net")
    register_network(info, "tiny_net:build")
    try:
        model = create_network("tiny-test", 3, 1)  # image_size: the entry's 8
        assert model[1].in_features == 64 and model[1].out_features == 3
        assert "def build(" in network_source("tiny-test")
    finally:
        STANDARD._values.pop("tiny-test")  # not left for the other tests' lists
        STANDARD._infos.pop("tiny-test")


def test_a_builder_path_without_an_attribute_is_refused():
    with pytest.raises(ValueError, match="module:attribute"):
        register_network(NetworkInfo("bad", "x", 8, 4, "x"), "trainyard.networks.lenet")
