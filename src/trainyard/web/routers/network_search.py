"""/api/networks/search and /api/networks/{name}: the whole timm zoo, searched, not tabled.

Hundreds of names cannot each be built for a parameter count up front, so the form searches
names here and asks for one network's details (parameters, input size) when it is picked.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Query

from trainyard.web.deps import Ctx
from trainyard.web.schemas import inference as more

router = APIRouter(prefix="/api/networks", tags=["networks"])


@router.get("/search", response_model=more.NetworkNames)
async def search(q: str = "", limit: int = Query(50, ge=1, le=2000),
                 head: Literal["", "fasterrcnn", "retinanet", "fcos"] = Query(
                     "", description="a detector head: the models found as its backbones "
                     "(``fasterrcnn:timm:<model>``), for a detection dataset")) -> more.NetworkNames:
    """``timm:`` names containing every word of ``q``, shortest first (or, with ``head``, that
    detector on each), with each one's intended image size (from timm's configuration: no network
    is built; parameters: ``/api/networks/{name}``)."""
    from trainyard.networks import get_network, timm_networks  # imports torch and timm: on first use

    def found() -> more.NetworkNames:
        names = [f"{head}:{n}" if head else n for n in timm_networks.search(q, limit)]
        return more.NetworkNames(networks=names, image_sizes={n: get_network(n).image_size for n in names})

    return await asyncio.to_thread(found)


@router.get("/{name}", response_model=more.Network)
async def network_details(ctx: Ctx, name: str) -> more.Network:
    """One network (standard or ``timm:``) with its parameter count, computed now (and cached)."""
    from trainyard.jobs.kinds.precheck import cache_for
    from trainyard.networks import get_network  # the torch-free table; a timm: name loads timm

    info = await asyncio.to_thread(get_network, name)  # UnknownNetwork: a 404
    params = await asyncio.to_thread(cache_for(ctx).parameter_count, info.name)
    return more.Network.of(info, params)
