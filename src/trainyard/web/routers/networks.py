"""/api/networks: the standard networks, their source (to customise), and inspecting any network."""

from __future__ import annotations

from dataclasses import asdict
from functools import cache

import torch
from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field, model_validator

from trainyard.core.errors import InvalidInput
from trainyard.networks import registry
from trainyard.networks.custom import check_network_isolated
from trainyard.web.bounded_pool import BoundedPool

router = APIRouter(prefix="/api/networks", tags=["networks"])
CHECK_TIMEOUT_S = 60.0  # the child process is killed after this (as before); a real network builds in seconds
# Checks run in a pool of their own, never asyncio's default one, and a few at a time: each
# is a child process building a network.
checks = BoundedPool("trainyard-inspect", workers=2, queue=8)


@cache
def parameter_count(name: str, num_classes: int = 10) -> int:
    """Parameters of a standard network; built on the meta device, so it costs no memory."""
    with torch.device("meta"):
        model = registry.create_network(name, num_classes, 3)
    return sum(p.numel() for p in model.parameters())


@router.get("")
def list_networks() -> dict:
    return {"networks": [{**asdict(info), "params": parameter_count(info.name)}
                         for info in registry.list_networks()]}


@router.get("/{name}/source", response_class=PlainTextResponse)
def network_source(name: str) -> str:
    """A custom-network file equivalent to the standard network: the start of "Customize"."""
    return registry.network_source(name)  # UnknownNetwork is a 404


class InspectRequest(BaseModel):
    network: str | None = None
    source: str | None = None
    num_classes: int = Field(10, ge=1, le=100_000)
    in_channels: int = Field(3, ge=1, le=4)
    image_size: int | None = Field(None, ge=8, le=1024)

    @model_validator(mode="after")
    def _one(self) -> InspectRequest:
        if (self.network is None) == (self.source is None):
            raise ValueError("give exactly one of network or source")
        return self


@router.post("/inspect")
async def inspect(request: InspectRequest) -> dict:
    """Build the network in a separate process and list its layers with output shapes.

    A network that does not build answers ``{"ok": false, "error": ..., "line": N}``.
    """
    if request.source is not None and request.image_size is None:
        raise InvalidInput("a custom network needs image_size")
    return await checks.run(check_network_isolated, request.source, request.num_classes, request.in_channels,
                            request.image_size, network=request.network, timeout=CHECK_TIMEOUT_S)
