"""The registry of standard networks: one name -> one builder, plus what a user needs to pick it.

A builder is `build(num_classes, in_channels, image_size) -> nn.Module`, the same signature a
custom network file defines, so a standard network and a custom one are interchangeable.
Names are user-facing and stable (they are stored in job specs and checkpoints).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from trainyard.core.registry import Registry, UnknownName

Builder = Callable[[int, int, int], nn.Module]


@dataclass(frozen=True)
class NetworkInfo:
    """What the UI, CLI and training need to know about a standard network."""

    name: str
    description: str
    image_size: int  # intended square input size (after any crop)
    batch_size: int  # default batch size (DIGITS's where DIGITS had the network)
    source_module: str  # where the network is defined: our module or torchvision's
    min_image_size: int = 32  # smallest square input the network accepts


class UnknownNetwork(UnknownName):
    """Raised for a network name that is not registered; the message lists the valid names."""


_NETWORKS: Registry[Builder] = Registry("network", error=UnknownNetwork)
_SOURCES: dict[str, Callable[[], str]] = {}
# prefix -> resolve(name) -> (info, builder, source): whole families named on demand (timm:...)
_RESOLVERS: dict[str, Callable[[str], tuple[NetworkInfo, Builder, Callable[[], str]]]] = {}


def register_resolver(prefix: str, resolve: Callable[[str], tuple[NetworkInfo, Builder, Callable[[], str]]]) -> None:
    """Names starting with ``prefix`` are looked up by ``resolve`` (UnknownNetwork if none)."""
    _RESOLVERS[prefix] = resolve


def _resolved(name: str) -> tuple[NetworkInfo, Builder, Callable[[], str]]:
    for prefix, resolve in _RESOLVERS.items():
        if isinstance(name, str) and name.startswith(prefix):
            return resolve(name)
    families = [f"{prefix}<model>" for prefix in _RESOLVERS]
    raise UnknownNetwork("network", name, _NETWORKS.names() + families)


def register_network(
    name: str,
    *,
    image_size: int,
    batch_size: int,
    description: str,
    min_image_size: int = 32,
    source: Callable[[], str] | None = None,
    source_module: str | None = None,
) -> Callable[[Builder], Builder]:
    """Decorator: register `build` under `name`.

    `source` returns the text of a stand-alone custom-network file equivalent to the builder;
    without it the source is the builder's own module file (which must then be self-contained).
    `source_module` names where the network really comes from when the builder is a wrapper.
    """

    def decorator(build: Builder) -> Builder:
        info = NetworkInfo(
            name=name,
            description=description,
            image_size=image_size,
            batch_size=batch_size,
            source_module=source_module or build.__module__,
            min_image_size=min_image_size,
        )
        _NETWORKS.register(name, build, info=info)
        _SOURCES[name] = source or (lambda: _module_source(build.__module__))
        return build

    return decorator


def list_networks() -> list[NetworkInfo]:
    """All standard networks, in registration order (the DIGITS three first)."""
    return _NETWORKS.infos()


def get_network(name: str) -> NetworkInfo:
    """The NetworkInfo for `name` (registered, or resolved such as ``timm:<model>``);
    UnknownNetwork (a NotFound, so a ValueError) if there is none."""
    if name in _NETWORKS:
        return _NETWORKS.info(name)
    return _resolved(name)[0]


def create_network(
    name: str, num_classes: int, in_channels: int = 3, image_size: int | None = None
) -> nn.Module:
    """Build a freshly initialised standard network (never downloads weights)."""
    info = get_network(name)
    if num_classes < 1 or in_channels < 1:
        raise ValueError(f"num_classes and in_channels must be >= 1, got {num_classes}, {in_channels}")
    build = _NETWORKS.get(name) if name in _NETWORKS else _resolved(name)[1]
    return build(num_classes, in_channels, image_size or info.image_size)


def network_source(name: str) -> str:
    """Python source of a custom-network file equivalent to the standard network `name`."""
    get_network(name)
    return _SOURCES[name]() if name in _SOURCES else _resolved(name)[2]()


def _module_source(module_name: str) -> str:
    # Read the file rather than inspect.getsource(module) so the text is exactly what ships.
    module = importlib.import_module(module_name)
    if module.__file__ is None:  # a namespace package has no file to ship
        raise ValueError(f"network module {module_name!r} has no source file")
    return Path(module.__file__).read_text(encoding="utf-8")
