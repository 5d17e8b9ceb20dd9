"""/api/networks: the standard networks, their source (to customise), and inspecting any network.

Listing reads the torch-free network table; a parameter count missing from the cache, a
network's source and an inspection load torch (in the handlers, so the server starts without it).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field, model_validator

from trainyard import networks
from trainyard.core.errors import InvalidInput
from trainyard.core.vocabulary import DEFAULT_TASK, Task
from trainyard.jobs.context import Context
from trainyard.networks import cache as network_cache
from trainyard.web.bounded_pool import BoundedPool
from trainyard.web.deps import Ctx
from trainyard.web.schemas import inference as more

router = APIRouter(prefix="/api/networks", tags=["networks"])
# Checks run in a pool of their own, never asyncio's default one. The checker's own queue
# (networks/check_gate.py) bounds how many build a network and refuses the rest at once (429,
# Retry-After): this pool has threads for all of those plus a few for cached and text-only
# answers, so those never wait behind a slow build.
checks = BoundedPool("trainyard-inspect", workers=network_cache.checks.workers + network_cache.checks.queue + 4,
                     queue=16)


@router.get("", response_model=more.NetworkList)
def list_networks(ctx: Ctx, num_classes: Annotated[int, Query(ge=1, le=100_000)] = 10,
                  in_channels: Annotated[int, Query(ge=1, le=4)] = 3) -> more.NetworkList:
    """The standard networks, with their parameter counts for ``num_classes`` and ``in_channels``
    (the new-model form asks for its dataset's, so they match what Visualize says)."""
    from trainyard.jobs.kinds.precheck import cache_for

    counts = cache_for(ctx)
    return more.NetworkList(
        networks=[more.Network.of(info, counts.parameter_count(info.name, num_classes, in_channels))
                  for info in networks.list_networks()],
        num_classes=num_classes, in_channels=in_channels)


def warm(ctx: Context) -> None:
    """Count the default parameters once at start-up (in a thread), so no page waits for it."""
    from trainyard.jobs.kinds.precheck import cache_for

    counts = cache_for(ctx)
    for info in networks.list_networks():
        counts.parameter_count(info.name)


@router.get("/{name}/source", response_class=PlainTextResponse)
def network_source(name: str) -> str:
    """A custom-network file equivalent to the standard network: the start of "Customize"."""
    from trainyard.networks import registry

    return registry.network_source(name)  # UnknownNetwork is a 404


@router.get("/templates/{task}", response_class=PlainTextResponse)
def network_template(task: Literal["detection"]) -> str:
    """The custom-network file the editor starts from on a dataset of ``task`` (a detector's
    convention: networks/custom_detection.py); a classifier's is the editor's own example."""
    from trainyard.networks.custom_detection import TEMPLATES

    return TEMPLATES[task]


def _task_of(network: str | None) -> str | None:
    """A standard network's task, None for a custom one (or a name the check will refuse)."""
    try:
        return networks.get_network(network).task if network else None
    except networks.UnknownNetwork:
        return None


class InspectRequest(BaseModel):
    network: str | None = None
    source: str | None = None
    num_classes: int = Field(10, ge=1, le=100_000)
    in_channels: int = Field(3, ge=1, le=4)
    image_size: int | None = Field(None, ge=8, le=1024)
    # (height, width) where it is not a square (a CLI asking for its queued job's check)
    input_size: tuple[Annotated[int, Field(ge=8, le=4096)], Annotated[int, Field(ge=8, le=4096)]] | None = None
    task: Task = DEFAULT_TASK  # a detector is checked as one

    @model_validator(mode="after")
    def _one(self) -> InspectRequest:
        if (self.network is None) == (self.source is None):
            raise ValueError("give exactly one of network or source")
        return self


@router.post("/inspect", response_model=more.Inspection)
async def inspect(ctx: Ctx, request: InspectRequest) -> more.Inspection:
    """Build the network in a separate process and list its layers with output shapes.

    A network that does not build answers ``{"ok": false, "error": ..., "line": N}``.
    """
    if request.source is not None and request.image_size is None:
        raise InvalidInput("a custom network needs image_size")
    from trainyard.jobs.kinds.precheck import cache_for

    # A standard network is checked as what it is (a detector takes boxes), whatever was asked.
    task = _task_of(request.network) or request.task
    # Its own bounded pool: slow checks never hold up the scheduler or other requests (the check
    # itself kills its child process after its timeout).
    answer = await checks.run(
        cache_for(ctx).check, source=request.source, network=request.network, num_classes=request.num_classes,
        in_channels=request.in_channels, image_size=request.image_size, input_size=request.input_size,
        timeout=ctx.settings.check_timeout_s, task=task)
    return more.Inspection.model_validate(answer)  # the checker's answer (from its child, or cached)
