"""Networks: the standard ones (DIGITS's LeNet, AlexNet, GoogLeNet and torchvision models),
custom network files, the training loss convention, and layer-by-layer inspection.

Importing this package registers the standard networks.
"""

from . import zoo as _zoo  # noqa: F401  (registers the standard networks)
from .custom import NetworkError, check_network, check_network_isolated, load_network_source
from .layer_report import inspect_network
from .loss import main_output, training_loss, unwrap_model
from .registry import (
    NetworkInfo,
    UnknownNetwork,
    create_network,
    get_network,
    list_networks,
    network_source,
    register_network,
)

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
