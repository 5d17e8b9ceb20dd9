"""Checkpoints loaded for inference, kept in a small LRU cache so warm requests do not reload.

A `LoadedModel` holds the network (eval mode), its class names and the preprocessing the
checkpoint records, plus the mean already shaped for the network. The cache key is the file's
path, modification time and size: a rewritten checkpoint (a resumed job writes the same epoch
again) is loaded afresh, an unchanged one is never read twice.

``user_code=False`` (the server) refuses to build a custom network: `UserCode` is raised, and
the caller serves the checkpoint from a worker process instead (inference/workers.py).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from trainyard.artifact.checkpoint import CheckpointError, build_model_from_checkpoint, load_checkpoint
from trainyard.artifact.preprocess import input_mean, input_std
from trainyard.inference import ort_runtime
from trainyard.inference.snapshots import InferenceError, NotFound, NotReady, model_checkpoint

__all__ = ["InferenceError", "LoadedModel", "NotFound", "NotReady", "load_model", "model_checkpoint"]

CACHE_SIZE = 4  # GoogLeNet is ~25 MB of weights; a few models stay warm


class UserCode(Exception):
    """A custom network's checkpoint, asked for by a process that must not run user source."""


@dataclass
class LoadedModel:
    """A checkpoint's network ready for inference, and everything needed to feed it."""

    path: Path
    model: nn.Module
    classes: list[str]
    preprocess: dict  # the checkpoint's preprocess entry (width, height, channels, resize, ...)
    epoch: float
    network: str  # a standard network's name, or "custom"
    device: torch.device
    mean: torch.Tensor | None  # (1, C, h, w) or (1, C, 1, 1) in 0..1 units, on ``device``
    spec: dict = field(default_factory=dict)
    std: torch.Tensor | None = None  # (1, C, 1, 1): the pretrained weights' scaling, if any
    # Forward passes hold this: visualisation hooks on the shared modules must see only their own
    # pass, and one pass at a time already uses every CPU core.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    gradcam_layer: str | None = None  # found on first use (see gradcam.py)
    _ort: ort_runtime.OrtForward | None = field(default=None, repr=False)
    _ort_tried: bool = field(default=False, repr=False)

    def cpu_forward(self) -> ort_runtime.OrtForward | None:
        """ONNX Runtime's forward pass of this CPU model (made on first use), or None where
        PyTorch answers: a GPU model, the runtime turned off, or an export that failed (logged)."""
        if not self._ort_tried:
            with self.lock:
                if not self._ort_tried:
                    if self.device.type == "cpu" and ort_runtime.wanted():
                        self._ort = ort_runtime.ort_forward(self.path, self.model, self.preprocess)
                    self._ort_tried = True
        return self._ort


_cache: OrderedDict[tuple, LoadedModel] = OrderedDict()
_cache_lock = threading.Lock()


def load_model(path: str | os.PathLike, device: str | torch.device = "cpu", *,
               user_code: bool = True) -> LoadedModel:
    """The model of checkpoint ``path``, from the cache when the file has not changed.

    With ``user_code=False`` a custom network is never built here: `UserCode` is raised.
    """
    path = Path(path).resolve()
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise NotFound(f"checkpoint {path.name} not found") from None
    key = (str(path), stat.st_mtime_ns, stat.st_size, str(device))
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            if _cache[key].network == "custom" and not user_code:
                raise UserCode(str(path))
            return _cache[key]
    loaded = _load(path, torch.device(device), user_code)
    with _cache_lock:
        _cache[key] = loaded
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return loaded


def _load(path: Path, device: torch.device, user_code: bool) -> LoadedModel:
    try:
        checkpoint = load_checkpoint(path)
    except CheckpointError as exc:
        raise InferenceError(str(exc)) from None
    except Exception as exc:  # not a torch file, or one weights_only refuses to unpickle
        raise InferenceError(f"{path.name} is not a readable checkpoint: {exc}") from None
    if checkpoint.get("network_source") is not None and not user_code:
        raise UserCode(str(path))
    model = build_model_from_checkpoint(checkpoint).to(device)
    prep = checkpoint["preprocess"]
    mean = input_mean(prep, device)
    return LoadedModel(path=path, model=model, classes=list(checkpoint["classes"]), preprocess=prep,
                       epoch=checkpoint["epoch"], network=checkpoint["network"] or "custom",
                       device=device, mean=mean, spec=checkpoint.get("spec") or {},
                       std=input_std(prep, device))
