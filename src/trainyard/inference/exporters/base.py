"""What every export format is: a named converter from the fp32 ONNX archive to its own copy.

An `Exporter` takes the `Conversion` (the checkpoint, its PyTorch network, the fp32 ONNX graph
and the data to calibrate on) and gives a `Converted`: the archive member that replaces
model.onnx, and a runner that answers logits for prepared inputs on one thread, which the
export-time check (figures.py) compares with PyTorch's. A copy this machine cannot run (Core ML
off Apple machines) has no runner and says why: its manifest claims no agreement.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from torch import nn

from trainyard.inference.onnx_export import ExportError

Runner = Callable[[np.ndarray], np.ndarray]  # prepared inputs (N, C, h, w) float32 -> logits (N, classes)


def runtime_script() -> bytes:
    """The use_archive.py every non-ONNX classifier archive ships (examples/runtimes): it finds
    which model file the archive holds and imports that runtime alone."""
    return (resources.files("trainyard") / "examples" / "runtimes" / "use_archive.py").read_bytes()


class FormatRefused(ExportError):
    """A format this machine or this model cannot export to (a missing runtime, a task it does not
    take), or a copy too far from PyTorch to ship without --force."""


@dataclass
class Conversion:
    """What an exporter converts from."""

    checkpoint: dict
    checkpoint_path: Path
    model: nn.Module
    onnx_fp32: bytes
    calibration: Callable[[int], np.ndarray]  # N -> N prepared training images (fewer if the split is small)
    calibration_images: int = 200


@dataclass
class Converted:
    """A format's copy of the network: the member replacing model.onnx, and how to run it."""

    name: str
    data: bytes
    run: Runner | None  # None: this machine cannot run the copy, and not_checked_because says why
    details: dict = field(default_factory=dict)  # layout, quantization: what the manifest says of it
    replaces: dict[str, bytes] = field(default_factory=dict)  # archive members of its own (a script)
    not_checked_because: str = ""

    @property
    def size_bytes(self) -> int:
        """The copy's size on disk: its file, and its weights file where it has one."""
        return len(self.data) + len(self.replaces.get(self.details.get("weights_file", ""), b""))


@dataclass(frozen=True)
class Exporter:
    """One format of the registry (exporters/__init__.py)."""

    name: str
    summary: str
    runtime: tuple[str, ...]  # the modules the export and its archive's script need
    install: str  # the command that brings them, named in the refusal
    convert: Callable[[Conversion], Converted]
    tasks: tuple[str, ...] = ("classification",)
    int8: bool = False  # held to the int8 tolerances (figures.py)
    runs_here: Callable[[], bool] = lambda: True  # whether this machine can run the copy (and so check it)

    def require_runtime(self) -> None:
        missing = [name for name in self.runtime if importlib.util.find_spec(name) is None]
        if missing:
            raise FormatRefused(f"the {self.name} format needs {', '.join(missing)}, which is not installed "
                                f"here: {self.install}")


def ort_runner(model_bytes: bytes) -> Runner:
    """An ONNX Runtime session on one thread (the latency the figures compare), as a Runner."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name

    def run(x: np.ndarray) -> np.ndarray:
        return session.run(None, {name: np.ascontiguousarray(x, dtype=np.float32)})[0]
    return run
