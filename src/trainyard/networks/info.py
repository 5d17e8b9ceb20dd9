"""What a network is to the UI, the CLI and job specs: its NetworkInfo, and the unknown-name error.

Torch-free on purpose: the table of standard networks (table.py), spec validation and the
model form read these without building anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainyard.core.registry import UnknownName
from trainyard.core.vocabulary import DEFAULT_TASK, Task

# Names of timm's models, as networks: "timm:<model>" (timm_networks.py; the table names the family).
TIMM_PREFIX = "timm:"


@dataclass(frozen=True)
class NetworkInfo:
    """What the UI, CLI and training need to know about a standard network."""

    name: str
    description: str
    image_size: int  # intended square input size (after any crop)
    batch_size: int  # default batch size (DIGITS's where DIGITS had the network)
    source_module: str  # where the network is defined: our module or torchvision's
    min_image_size: int = 32  # smallest square input the network accepts
    task: Task = DEFAULT_TASK  # what kind of dataset it trains on (core/tasks.py)
    # The training settings this network is meant to train with (TrainSettings fields, nested
    # panels as dicts), where the user sets none of their own: its recipe. Empty: the defaults.
    recipe: tuple[tuple[str, Any], ...] = ()

    def recipe_settings(self) -> dict[str, Any]:
        """The recipe as a settings dict (a copy: callers merge the user's settings over it)."""
        return {name: dict(value) if isinstance(value, dict) else value for name, value in self.recipe}


class UnknownNetwork(UnknownName):
    """Raised for a network name that is not registered; the message lists the valid names."""
