"""CPU forward passes through ONNX Runtime: the snapshot's verified ONNX export, cached beside it.

On a CPU, ONNX Runtime runs these networks several times faster than eager PyTorch and holds
far less memory. The preprocessing is unchanged (artifact/preprocess.py builds the input
tensor); only the forward pass moves. The graph is exported once per snapshot, checked against
PyTorch by `check_onnx` (the same check a downloaded archive passes), and written atomically
next to the checkpoint as ``epoch-NNNN.pt.onnx``; a later process reuses it when it is newer
than the checkpoint (a resumed job that rewrites an epoch makes the cached graph stale).

Anything that goes wrong (an exporter that refuses the network, a check that fails, a read-only
folder) is logged with its reason, and the caller keeps PyTorch: a slower answer, never a
different or missing one. ``TRAINYARD_INFERENCE_RUNTIME=torch`` turns the ONNX path off.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
from torch import nn

from trainyard.artifact.preprocess import input_shape
from trainyard.core.files import write_atomic

log = logging.getLogger(__name__)
SUFFIX = ".onnx"
RUNTIME_ENV = "TRAINYARD_INFERENCE_RUNTIME"  # "onnx" (default on a CPU) or "torch"


class OrtForward:
    """A loaded ONNX Runtime session: float32 (N, C, h, w) inputs -> (N, classes) logits."""

    def __init__(self, onnx: bytes | str):
        import onnxruntime as ort

        from trainyard.inference.onnx_export import INPUT_NAME, OUTPUT_NAME

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: its notices are not for users
        self.session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
        self.input, self.output = INPUT_NAME, OUTPUT_NAME

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self.session.run([self.output], {self.input: np.ascontiguousarray(inputs, np.float32)})[0]


def onnx_path(checkpoint: Path) -> Path:
    """Where the ONNX export of ``checkpoint`` is cached: beside it, ``<name>.onnx``."""
    return checkpoint.with_name(checkpoint.name + SUFFIX)


def wanted() -> bool:
    """Whether the ONNX path is on (the environment may ask for PyTorch only)."""
    return os.environ.get(RUNTIME_ENV, "onnx").strip().lower() != "torch"


def ort_forward(checkpoint: Path, model: nn.Module, preprocess: dict) -> OrtForward | None:
    """The ONNX Runtime forward pass of a CPU model, or None (logged) where PyTorch must answer."""
    cached = onnx_path(checkpoint)
    if _fresh(cached, checkpoint):
        try:
            return OrtForward(str(cached))
        except Exception as exc:  # a damaged cache file: export again
            log.info("cached ONNX export %s unreadable (%s); exporting again", cached.name, exc)
    try:
        return OrtForward(_exported(cached, model, preprocess))
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


def _fresh(cached: Path, checkpoint: Path) -> bool:
    try:
        return cached.stat().st_mtime_ns >= checkpoint.stat().st_mtime_ns
    except FileNotFoundError:
        return False
