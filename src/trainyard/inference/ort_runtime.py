"""CPU forward passes through ONNX Runtime: the snapshot's verified ONNX export, cached beside it.

On a CPU, ONNX Runtime runs these networks several times faster than eager PyTorch and holds
far less memory. The preprocessing is unchanged (artifact/inputs.py builds the input array);
only the forward pass moves. The graph is exported once per snapshot, checked against PyTorch
by `check_onnx` (the same check a downloaded archive passes), and written atomically next to
the checkpoint as ``epoch-NNNN.pt.onnx``, with ``epoch-NNNN.pt.inputs.npz`` beside it: the
classes, the preprocessing entry and its mean and std constants. A later process reuses the
pair when both are newer than the checkpoint (a resumed job that rewrites an epoch makes them
stale), and then classifies without reading the checkpoint or importing torch (`cached_inputs`).

Anything that goes wrong (an exporter that refuses the network, a check that fails, a read-only
folder) is logged with its reason, and the caller keeps PyTorch: a slower answer, never a
different or missing one. ``TRAINYARD_INFERENCE_RUNTIME=torch`` turns the ONNX path off.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trainyard.artifact.inputs import input_shape
from trainyard.core.files import write_atomic

if TYPE_CHECKING:
    from torch import nn

log = logging.getLogger(__name__)
SUFFIX = ".onnx"
INPUTS_SUFFIX = ".inputs.npz"
RUNTIME_ENV = "TRAINYARD_INFERENCE_RUNTIME"  # "onnx" (default on a CPU) or "torch"


class OrtForward:
    """A loaded ONNX Runtime session: float32 (N, C, h, w) inputs -> (N, classes) logits."""

    def __init__(self, onnx: bytes | str):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: its notices are not for users
        # Idle ONNX Runtime threads spin by default, taking the cores that decode the next images
        # (classify-many) or answer other requests (the server): 1,040 -> 1,380 images/s for a
        # LeNet classify-many on 2 cores with spinning off (bench/startup.py's images).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
        # The graph's own names (onnx_export's INPUT_NAME and OUTPUT_NAME), read without torch.
        self.input, self.output = self.session.get_inputs()[0].name, self.session.get_outputs()[0].name

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self.session.run([self.output], {self.input: np.ascontiguousarray(inputs, np.float32)})[0]


@dataclass
class Inputs:
    """What feeds a cached export: the checkpoint's facts (classes, preprocess without the mean
    image, epoch, network, spec: JSON) and its input constants (artifact/inputs.py)."""

    about: dict
    mean: np.ndarray | None
    std: np.ndarray | None


def onnx_path(checkpoint: Path) -> Path:
    """Where the ONNX export of ``checkpoint`` is cached: beside it, ``<name>.onnx``."""
    return checkpoint.with_name(checkpoint.name + SUFFIX)


def inputs_path(checkpoint: Path) -> Path:
    """Where the export's `Inputs` are cached: beside it, ``<name>.inputs.npz``."""
    return checkpoint.with_name(checkpoint.name + INPUTS_SUFFIX)


def cached_inputs(checkpoint: Path) -> Inputs | None:
    """The `Inputs` of a fresh cached export of ``checkpoint``, or None (then the checkpoint is
    read with torch). Reads no checkpoint and imports no torch; `ort_forward` then opens the
    graph when the first images come (a job forks its image decoders before that)."""
    if not is_cached(checkpoint):
        return None
    try:
        with np.load(inputs_path(checkpoint), allow_pickle=False) as saved:  # arrays and text: nothing unpickled
            return Inputs(json.loads(str(saved["about"])), _optional(saved, "mean"), _optional(saved, "std"))
    except Exception as exc:  # a damaged cache file: the caller reads the checkpoint instead
        log.info("cached inputs of %s unreadable (%s); reading the checkpoint", checkpoint.name, exc)
        return None


def cached_graph(checkpoint: Path) -> bytes | None:
    """The cached ONNX export of ``checkpoint`` when it is fresh (an archive reuses it), else None."""
    graph = onnx_path(checkpoint)
    try:
        return graph.read_bytes() if _fresh(graph, checkpoint) else None
    except OSError:
        return None


def is_cached(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` has a fresh cached export (both files exist and are newer)."""
    return wanted() and _fresh(onnx_path(checkpoint), checkpoint) and _fresh(inputs_path(checkpoint), checkpoint)


def _optional(saved, key: str) -> np.ndarray | None:
    return saved[key] if key in saved.files else None


def _save_inputs(path: Path, inputs: Inputs) -> None:
    # Any: numpy's stub reads a ** mapping as possibly holding savez's allow_pickle flag.
    arrays: dict[str, Any] = {"about": np.array(json.dumps(inputs.about))}
    arrays.update((key, value) for key, value in (("mean", inputs.mean), ("std", inputs.std)) if value is not None)
    write_atomic(path, lambda f: np.savez(f, **arrays))


def wanted() -> bool:
    """Whether the ONNX path is on (the environment may ask for PyTorch only)."""
    return os.environ.get(RUNTIME_ENV, "onnx").strip().lower() != "torch"


def ort_forward(checkpoint: Path, model: Callable[[], nn.Module], inputs: Inputs) -> OrtForward | None:
    """The ONNX Runtime forward pass of a CPU model, or None (logged) where PyTorch must answer.

    Opens the cached graph when it is fresh; otherwise exports ``model()`` (read only then) and
    caches the graph, then its `Inputs` (written last: their presence says the pair is whole)."""
    graph = onnx_path(checkpoint)
    if _fresh(graph, checkpoint):
        try:
            forward = OrtForward(str(graph))
            _cache_inputs(checkpoint, inputs)
            return forward
        except Exception as exc:  # a damaged cache file: export again
            log.info("cached ONNX export %s unreadable (%s); exporting again", graph.name, exc)
    try:
        forward = OrtForward(_exported(graph, model(), inputs.about["preprocess"]))
        _cache_inputs(checkpoint, inputs)
        return forward
    except Exception as exc:  # any failure means PyTorch answers; the reason goes to the log
        log.warning("ONNX Runtime not used for %s, PyTorch answers instead: %s: %s",
                    checkpoint.name, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        return None


def _exported(cached: Path, model: nn.Module, preprocess: dict) -> bytes:
    """A newly exported and checked graph, also written (atomically) to ``cached``."""
    from trainyard.inference.onnx_export import check_onnx, export_onnx

    shape = input_shape(preprocess)
    data = export_onnx(model, shape)
    check_onnx(data, model, shape)  # raises ExportError with the figures if ORT disagrees
    try:
        write_atomic(cached, lambda f: f.writelines([data]))
    except OSError as exc:  # a read-only folder: use it this time, export again next time
        log.info("ONNX export %s not cached: %s", cached.name, exc)
    return data


def _cache_inputs(checkpoint: Path, inputs: Inputs) -> None:
    path = inputs_path(checkpoint)
    if _fresh(path, checkpoint):
        return
    try:
        _save_inputs(path, inputs)
    except Exception as exc:  # a read-only folder, say: this process has what it needs anyway
        log.info("ONNX inputs %s not cached: %s", path.name, exc)


def _fresh(cached: Path, checkpoint: Path) -> bool:
    try:
        return cached.stat().st_mtime_ns >= checkpoint.stat().st_mtime_ns
    except FileNotFoundError:
        return False
