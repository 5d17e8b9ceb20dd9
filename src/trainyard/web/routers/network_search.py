"""/api/networks/search and /api/networks/{name}: the whole timm zoo, searched, not tabled.

Hundreds of names cannot each be built for a parameter count up front, so the form searches
names here and asks for one network's details (parameters, input size) when it is picked.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from fastapi import APIRouter, Query

from trainyard.networks import registry, timm_networks
from trainyard.web.routers.networks import parameter_count

router = APIRouter(prefix="/api/networks", tags=["networks"])


@router.get("/search")
async def search(q: str = "", limit: int = Query(50, ge=1, le=2000)) -> dict:
    """``timm:`` names containing every word of ``q``, shortest first."""
    names = await asyncio.to_thread(timm_networks.search, q, limit)
    return {"networks": names}


@router.get("/{name}")
async def network_details(name: str) -> dict:
    """One network (standard or ``timm:``) with its parameter count, computed now."""
    info = await asyncio.to_thread(registry.get_network, name)  # UnknownNetwork: a 404
    params = await asyncio.to_thread(parameter_count, info.name)
    return {**asdict(info), "params": params}
