"""Checkpoints loaded for inference, kept in a small LRU cache so warm requests do not reload.

A `LoadedModel` holds a checkpoint's class names, the preprocessing it records and that
preprocessing's constants, and answers `logits` for prepared inputs. On a CPU the answer comes
from ONNX Runtime (ort_runtime.py); once a snapshot's export is cached, loading it reads neither
the checkpoint nor torch, so a classify-many job, the CLI and the server classify without
importing torch at all. The PyTorch network is read on first need (`model`): on a GPU, for
the layer views and Grad-CAM, or where the export fails.

The cache key is the file's path, modification time and size: a rewritten checkpoint (a
resumed job writes the same epoch again) is loaded afresh, an unchanged one is never read twice.

``user_code=False`` (the server) refuses to build a custom network: `UserCode` is raised, and
the caller serves the checkpoint from a worker process instead (inference/worker_pool.py). Whether a
checkpoint is custom is never taken from the files beside it (the job writes those, and a custom
job runs user code): it is read from the checkpoint by this side and kept in the trust ledger
under the checkpoint's hash (trust.py); the cached export is used only when the ledger vouches
for it, and `model` refuses a custom network to such a process whatever the cache said.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trainyard.artifact.checkpoint import CheckpointHeader
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference import ort_runtime, trust
from trainyard.inference.model_cache import ModelCache, file_key
from trainyard.inference.snapshots import InferenceError, NotFound, NotReady, model_checkpoint

if TYPE_CHECKING:
    from torch import nn

__all__ = ["InferenceError", "LoadedModel", "NotFound", "NotReady", "load_model", "model_checkpoint"]

CACHE_SIZE = 4  # GoogLeNet is ~25 MB of weights; a few models stay warm
# The preprocessing of a custom network's model in a process that refuses user code: load_model
# raises UserCode before anything is fed, so no image ever meets these sizes.
NEVER_FED = Preprocessing(width=0, height=0, channels=0)


class UserCode(Exception):
    """A custom network's checkpoint, asked for by a process that must not run user source."""


@dataclass
class LoadedModel:
    """A checkpoint ready for inference, and everything needed to feed it."""

    path: Path
    classes: list[str]
    preprocess: Preprocessing  # the checkpoint's (width, height, channels, resize, crop, ...)
    epoch: float
    network: str  # a standard network's name, or "custom"
    device: str  # "cpu" or "cuda"
    mean: np.ndarray | None  # (1, C, h, w) or (1, C, 1, 1) float32 in 0..1 units (artifact/inputs.py)
    std: np.ndarray | None = None  # (1, C, 1, 1): the pretrained weights' scaling, if any
    spec: dict = field(default_factory=dict)
    # a multi-label classifier's threshold of each label (its scores are sigmoids); None: softmax
    thresholds: list[float] | None = None
    sha: str = ""  # the checkpoint's SHA-256, its key in the trust ledger
    named: Path | None = None  # the path as the caller named it (says which ledger, trust.py)
    user_code: bool = True  # False: this process never builds a custom network
    # Forward passes hold this: visualisation hooks on the shared modules must see only their own
    # pass, and one pass at a time already uses every CPU core.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    gradcam_layer: str | None = None  # found on first use (see gradcam.py)
    _model: nn.Module | None = field(default=None, repr=False)
    _ort: ort_runtime.OrtForward | None = field(default=None, repr=False)
    _ort_tried: bool = field(default=False, repr=False)
    # Reentrant: making the ONNX export (held) may read the checkpoint's network (takes it again).
    _reading: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def model(self) -> nn.Module:
        """The PyTorch network (eval mode, on ``device``), read from the checkpoint on first use."""
        if self._model is None:
            with self._reading:  # not ``lock``: callers holding it for a hooked pass come here
                if self._model is None:
                    from trainyard.inference.torch_forward import build_network, read_checkpoint

                    checkpoint = read_checkpoint(self.path)
                    if not CheckpointHeader.of(checkpoint).network and not self.user_code:  # whatever a cache claimed
                        raise UserCode(str(self.path))
                    self._model = build_network(checkpoint, self.device)
        return self._model

    def cpu_forward(self) -> ort_runtime.OrtForward | None:
        """ONNX Runtime's forward pass of this CPU model (made on first use), or None where
        PyTorch answers: a GPU model, the runtime turned off, or an export that failed (logged)."""
        if not self._ort_tried:
            with self._reading:
                if not self._ort_tried:
                    if self.device == "cpu" and ort_runtime.wanted():
                        self._ort = ort_runtime.ort_forward(self.named or self.path, lambda: self.model,
                                                            self.inputs(), self.sha)
                    self._ort_tried = True
        return self._ort

    def inputs(self) -> ort_runtime.Inputs:
        """What an export of this model caches beside it, so a later load needs no checkpoint."""
        about = {"classes": self.classes, "epoch": self.epoch, "network": self.network, "spec": self.spec,
                 "preprocess": self.preprocess.to_dict(with_mean=False), "thresholds": self.thresholds}
        return ort_runtime.Inputs(about, self.mean, self.std)

    def logits(self, inputs: np.ndarray) -> np.ndarray:
        """(N, classes) float32 scores of prepared (N, C, h, w) inputs."""
        forward = self.cpu_forward()
        if forward is None:
            from trainyard.inference.torch_forward import torch_logits

            model = self.model
            with self.lock:
                return torch_logits(model, inputs, self.device)
        with self.lock:
            return forward(inputs)


_cache: ModelCache[LoadedModel] = ModelCache(CACHE_SIZE)


def load_model(path: str | os.PathLike, device: str = "cpu", *, user_code: bool = True) -> LoadedModel:
    """The model of checkpoint ``path``, from the cache when the file has not changed.

    With ``user_code=False`` a custom network is never built here: `UserCode` is raised.
    """
    named, path = Path(os.path.abspath(path)), Path(path).resolve()
    key = (str(named), *file_key(path, NotFound), device, user_code)
    # a custom network's too, unbuilt: the server learns it once, not per request
    loaded = _cache.get(key, lambda: _load(named, path, device, user_code))
    if loaded.network == "custom" and not user_code:
        raise UserCode(str(path))
    return loaded


def _load(named: Path, path: Path, device: str, user_code: bool) -> LoadedModel:
    """The checkpoint's model: from its cached export's inputs when the trust ledger vouches for
    them (no checkpoint read, no torch), else from the checkpoint, whose network is built unless
    it is user code not allowed here. A custom verdict the ledger holds needs no read at all."""
    try:
        sha = trust.digest(path)
    except OSError as exc:
        raise InferenceError(f"{path.name} is not a readable checkpoint: {exc}") from None
    record = trust.recall(named, sha)
    if record.get("network") == "custom" and not user_code:
        return _loaded(named, path, device, ort_runtime.Inputs(
            {"classes": [], "epoch": 0, "network": "custom", "preprocess": {}}, None, None), sha, user_code)
    inputs = ort_runtime.cached_inputs(named, sha, record) if device == "cpu" else None
    if inputs is not None:
        return _loaded(named, path, device, inputs, sha, user_code)
    from trainyard.inference.torch_forward import build_network, constants, read_checkpoint

    checkpoint = read_checkpoint(path)
    header = CheckpointHeader.of(checkpoint)
    about: dict[str, Any] = {"classes": list(header.classes), "epoch": header.epoch,
             "network": header.network_name, "spec": header.spec or {},
             "preprocess": Preprocessing.of_checkpoint(checkpoint).to_dict(with_mean=False),
             "thresholds": checkpoint.get("thresholds")}
    if record.get("network") != about["network"]:
        trust.remember(named, sha, network=about["network"])
    loaded = _loaded(named, path, device, ort_runtime.Inputs(about, *constants(checkpoint)), sha, user_code)
    if loaded.network != "custom" or user_code:
        loaded._model = build_network(checkpoint, device)
    return loaded


def _loaded(named: Path, path: Path, device: str, inputs: ort_runtime.Inputs, sha: str,
            user_code: bool) -> LoadedModel:
    about = inputs.about
    preprocess = Preprocessing.from_dict(about["preprocess"]) if about["preprocess"] else NEVER_FED
    return LoadedModel(path=path, classes=list(about["classes"]), preprocess=preprocess,
                       epoch=about["epoch"], network=about["network"], device=device, mean=inputs.mean,
                       std=inputs.std, spec=about.get("spec") or {}, thresholds=about.get("thresholds"), sha=sha,
                       named=named, user_code=user_code)
