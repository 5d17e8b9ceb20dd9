"""Building the standard networks, and their source: through the one registry in table.py.

A builder is `build(num_classes, in_channels, image_size) -> nn.Module`, the same signature a
custom network file defines, so a standard network and a custom one are interchangeable.
Names are user-facing and stable (they are stored in job specs and checkpoints). Each entry
names its builder by path; the builder's module (and torch, torchvision or timm with it) is
imported by the first call that builds that network or reads its source, not by this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .info import NetworkInfo, UnknownNetwork
from .table import STANDARD, get_network, list_networks, load_builder, register_network

if TYPE_CHECKING:
    from torch import nn

__all__ = ["NetworkInfo", "UnknownNetwork", "create_network", "get_network", "list_networks", "network_source",
           "register_network"]

Builder = Callable[[int, int, int], "nn.Module"]


def _builder(name: str) -> tuple[Builder, Callable[[], str]]:
    """(build, source) of a network that ``get_network`` knows: a standard one or of a family."""
    if name in STANDARD:
        build = load_builder(STANDARD.get(name))
        # A builder with a source() gives its own file's text; DIGITS's three are their module.
        source = getattr(build, "source", None) or (lambda: _module_source(build.__module__))
        return build, source
    from .table import family

    _, build, source = family(name).resolve(name)  # imports timm and torch: these names only
    return build, source


def create_network(
    name: str, num_classes: int, in_channels: int = 3, image_size: int | None = None
) -> nn.Module:
    """Build a freshly initialised standard network (never downloads weights)."""
    info = get_network(name)
    if num_classes < 1 or in_channels < 1:
        raise ValueError(f"num_classes and in_channels must be >= 1, got {num_classes}, {in_channels}")
    build, _ = _builder(name)
    return build(num_classes, in_channels, image_size or info.image_size)


def network_source(name: str) -> str:
    """Python source of a custom-network file equivalent to the standard network `name`."""
    get_network(name)
    return _builder(name)[1]()


def _module_source(module_name: str) -> str:
    # Read the file rather than inspect.getsource(module) so the text is exactly what ships.
    module = importlib.import_module(module_name)
    if module.__file__ is None:  # a namespace package has no file to ship
        raise ValueError(f"network module {module_name!r} has no source file")
    return Path(module.__file__).read_text(encoding="utf-8")
