"""The builders of the standard networks: one name -> one builder, registered against the table.

A builder is `build(num_classes, in_channels, image_size) -> nn.Module`, the same signature a
custom network file defines, so a standard network and a custom one are interchangeable.
Names are user-facing and stable (they are stored in job specs and checkpoints). What a user
needs to pick a network (its NetworkInfo) lives in table.py, which does not import torch; this
module is for the processes that build networks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from torch import nn

from trainyard.core.registry import Registry

from . import table, timm_networks, zoo
from .info import NetworkInfo, UnknownNetwork
from .table import get_network, list_networks

__all__ = ["NetworkInfo", "UnknownNetwork", "create_network", "get_network", "list_networks", "network_source",
           "register_network"]

Builder = Callable[[int, int, int], nn.Module]

_BUILDERS: Registry[Builder] = Registry("network", error=UnknownNetwork)
_SOURCES: dict[str, Callable[[], str]] = {}


def register_network(name: str, *, source: Callable[[], str] | None = None) -> Callable[[Builder], Builder]:
    """Decorator: register `build` for the standard network `name` (which the table must list).

    `source` returns the text of a stand-alone custom-network file equivalent to the builder;
    without it the source is the builder's own module file (which must then be self-contained).
    """
    table.STANDARD.get(name)  # UnknownNetwork: describe the network in table.py first

    def decorator(build: Builder) -> Builder:
        _BUILDERS.register(name, build)  # its NetworkInfo is the table's
        _SOURCES[name] = source or (lambda: _module_source(build.__module__))
        return build

    return decorator


def create_network(
    name: str, num_classes: int, in_channels: int = 3, image_size: int | None = None
) -> nn.Module:
    """Build a freshly initialised standard network (never downloads weights)."""
    info = get_network(name)
    if num_classes < 1 or in_channels < 1:
        raise ValueError(f"num_classes and in_channels must be >= 1, got {num_classes}, {in_channels}")
    build = _BUILDERS.get(name) if name in _BUILDERS else timm_networks.resolve(name)[1]
    return build(num_classes, in_channels, image_size or info.image_size)


def network_source(name: str) -> str:
    """Python source of a custom-network file equivalent to the standard network `name`."""
    get_network(name)
    return _SOURCES[name]() if name in _SOURCES else timm_networks.resolve(name)[2]()


def _module_source(module_name: str) -> str:
    # Read the file rather than inspect.getsource(module) so the text is exactly what ships.
    module = importlib.import_module(module_name)
    if module.__file__ is None:  # a namespace package has no file to ship
        raise ValueError(f"network module {module_name!r} has no source file")
    return Path(module.__file__).read_text(encoding="utf-8")


for _name, _build, _source in zoo.builders():
    register_network(_name, source=_source)(_build)
_missing = set(table.STANDARD.names()) - set(_BUILDERS.names())
if _missing:  # a table entry nobody can build would fail only when a job starts
    raise RuntimeError(f"standard networks without a builder: {sorted(_missing)}")
