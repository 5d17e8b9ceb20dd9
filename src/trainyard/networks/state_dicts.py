"""State dicts from weights files people hand in: a trainyard checkpoint, a .pt/.pth state dict,
or a .safetensors file.

Read with ``weights_only=True`` (a pickle that would run code is refused) or by safetensors.
Containers around the tensors ("model", "state_dict", "model_state_dict") are unwrapped, and the
prefixes DDP and torch.compile add to names are stripped, so weights saved from a wrapped model
fit the bare network. Pretrained initialisation (artifact/network.py) and the weights store
(weights/fit.py) both read files through `read_state_dict`.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from trainyard.core.errors import InvalidInput

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DDP / DataParallel and torch.compile
CONTAINER_KEYS = ("model", "state_dict", "model_state_dict")


class NotWeights(InvalidInput):
    """A file that is not a state dict of tensors."""


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The tensors of a weights file by (unwrapped) name; `NotWeights` when it holds none."""
    path = Path(path)
    obj: object  # a dict of tensors, a container of one, or anything else a file held
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            obj = load_file(str(path), device="cpu")
        else:  # mapped, not read: checking a large file's shapes costs no memory
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # not a tensor file, or unpickling refused
        raise NotWeights(f"{path.name} is not a weights file ({type(exc).__name__})") from None
    for key in CONTAINER_KEYS:
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict) or not any(isinstance(v, torch.Tensor) for v in obj.values()):
        raise NotWeights(f"{path.name} is not a weights file (it holds no tensors by name)")
    return {_unwrapped(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}


def _unwrapped(name: str) -> str:
    for prefix in WRAPPER_PREFIXES:
        while name.startswith(prefix):
            name = name[len(prefix):]
    return name
