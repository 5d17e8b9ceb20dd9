"""timm:NAME networks: resolved from timm's own list, built, inspected and customised like ours."""

from __future__ import annotations

import pytest
import torch

from trainyard.networks import (
    UnknownNetwork,
    check_network_isolated,
    create_network,
    get_network,
    load_network_source,
    network_source,
)
from trainyard.networks.timm_networks import search


def test_any_timm_model_is_a_network():
    info = get_network("timm:test_resnet")
    assert info.image_size == 160 and info.source_module == "timm"
    model = create_network("timm:test_resnet", 5, 1, 32)
    assert model(torch.zeros(2, 1, 32, 32)).shape == (2, 5)


def test_a_transformer_gets_the_dataset_image_size():
    model = create_network("timm:test_vit", 3, 3, 64)
    assert model(torch.zeros(1, 3, 64, 64)).shape == (1, 3)


def test_unknown_names_suggest_close_ones():
    with pytest.raises(UnknownNetwork, match="did you mean timm:resnet10t"):
        get_network("timm:resnet10tt")
    with pytest.raises(UnknownNetwork, match="timm:<model>"):
        get_network("resnet10t")


def test_search_finds_names_shortest_first():
    found = search("resnet 10", limit=5)
    assert found[:2] == ["timm:resnet101", "timm:resnet10t"] and all("resnet" in n and "10" in n for n in found)
    assert len(search("", limit=30)) == 30


def test_customize_source_builds_the_same_model():
    build = load_network_source(network_source("timm:test_resnet"))
    torch.manual_seed(0)
    mine = build(4, 3, 32)
    torch.manual_seed(0)
    theirs = create_network("timm:test_resnet", 4, 3, 32)
    assert all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), theirs.state_dict().values()))


def test_visualize_checks_a_timm_network_in_a_child_process():
    result = check_network_isolated(None, 4, 3, 32, network="timm:test_resnet")
    assert result["ok"], result
    assert result["params"] == sum(p.numel() for p in create_network("timm:test_resnet", 4, 3, 32).parameters())
