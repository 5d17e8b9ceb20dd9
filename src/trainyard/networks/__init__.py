"""Networks: the standard ones (DIGITS's LeNet, AlexNet, GoogLeNet and torchvision models),
custom network files, the training loss convention, and layer-by-layer inspection.

Importing this package loads only the torch-free table (NetworkInfo, get_network,
list_networks), so spec validation and the processes that only wait for a job stay light.
The names that build or run networks load their module, and torch, on first use; each standard
network's builder is a path in its registry entry (table.py), imported when it is first built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .info import NetworkInfo, UnknownNetwork
from .table import get_network, list_networks, register_network

if TYPE_CHECKING:
    from .custom import NetworkError, check_network, load_network_source
    from .isolated import check_network_isolated
    from .layer_report import inspect_network
    from .loss import main_output, training_loss, unwrap_model
    from .registry import create_network, network_source

# name -> the module (importing torch) that defines it
_LAZY = {
    "NetworkError": "custom", "check_network": "custom", "check_network_isolated": "isolated",
    "load_network_source": "custom", "inspect_network": "layer_report", "main_output": "loss",
    "training_loss": "loss", "unwrap_model": "loss", "create_network": "registry",
    "network_source": "registry",
}

__all__ = [
    "NetworkError",
    "NetworkInfo",
    "UnknownNetwork",
    "check_network",
    "check_network_isolated",
    "create_network",
    "get_network",
    "inspect_network",
    "list_networks",
    "load_network_source",
    "main_output",
    "network_source",
    "register_network",
    "training_loss",
    "unwrap_model",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value
