"""Fixtures for the weights store (tests/conftest.py loads them as a plugin): a loopback file
server and weight files in the published formats."""

from __future__ import annotations

import hashlib
import io

import pytest
import torch

from tests.weights.file_server import Served, start_server
from trainyard.networks import create_network

TIMM_ENTRY = "timm:test_resnet.r160_in1k"  # a tiny model timm ships, with hub weights
HUB_PATH = "/timm/test_resnet.r160_in1k/resolve/main/model.safetensors"


@pytest.fixture
def file_server(monkeypatch):
    """The loopback server, with HF_ENDPOINT (timm's downloads) pointing at it."""
    state, server = start_server()
    monkeypatch.setenv("HF_ENDPOINT", state.url)
    yield state
    server.shutdown()
    server.server_close()


def safetensors_bytes(network: str, num_classes: int = 1000, image_size: int = 160, seed: int = 0) -> bytes:
    from safetensors.torch import save

    torch.manual_seed(seed)
    model = create_network(network, num_classes, 3, image_size)
    return save({k: v.contiguous() for k, v in model.state_dict().items()})


def state_dict_bytes(network: str, num_classes: int = 10, image_size: int = 28) -> bytes:
    buffer = io.BytesIO()
    torch.save(create_network(network, num_classes, 3 if network != "lenet" else 1, image_size).state_dict(), buffer)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def hub_file() -> Served:
    """timm:test_resnet weights as the hub serves them, with their SHA-256 as the ETag."""
    body = safetensors_bytes("timm:test_resnet")
    return Served(body, etag=hashlib.sha256(body).hexdigest())
