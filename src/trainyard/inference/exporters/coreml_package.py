"""The ``coreml`` and ``coreml-fp16`` formats: a Core ML ML Program (model.mlpackage, zipped as
model.mlpackage.zip) for Apple devices, converted by coremltools.

coremltools converts on any machine, from the traced network (TorchScript: its most tested PyTorch
path); Core ML itself runs only on macOS (and iOS). On a Mac the check runs the package on the CPU
as the other formats' checks run theirs; elsewhere the manifest says ``checked: false`` and why,
and claims no agreement or latency it did not measure. ``coreml`` keeps fp32 (Core ML's default
would be fp16); ``coreml-fp16`` halves the weights, the precision the Neural Engine runs. The input
is one image (batch 1, static), as on a device. The zip is stored, not deflated: its size is the
package's, and the archive compresses it once.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.exporters.base import Conversion, Converted, Exporter, FormatRefused, Runner, runtime_script
from trainyard.inference.onnx_export import _Logits, sample_inputs

if TYPE_CHECKING:  # an optional extra: imported when a conversion runs
    from coremltools.models import MLModel

INSTALL = "pip install 'trainyard[coreml]' (coremltools converts anywhere; the package runs on Apple machines only)"
NOT_HERE = "Core ML runs models only on Apple machines (macOS); this machine can convert but not run it"
MEMBER = "model.mlpackage.zip"


def runs_here() -> bool:
    """Whether coremltools can run a package here: macOS, with its compiled Core ML bridge (the
    package is looked for first: finding a submodule imports its parent, which fails without it)."""
    return (sys.platform == "darwin" and importlib.util.find_spec("coremltools") is not None
            and importlib.util.find_spec("coremltools.libcoremlpython") is not None)


def _coremltools():
    """coremltools, imported without its warnings: off macOS it logs each Core ML class it cannot
    load, and it warns that it was tested with an older PyTorch (the check measures what counts)."""
    quiet = logging.getLogger("coremltools")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import coremltools
    finally:
        quiet.setLevel(level)
    return coremltools


def converter(precision: str):
    def convert(conversion: Conversion) -> Converted:
        ct = _coremltools()
        shape = Preprocessing.of_checkpoint(conversion.checkpoint).input_shape
        wrapped = _Logits(conversion.model.eval()).eval()
        chosen = ct.precision.FLOAT32 if precision == "fp32" else ct.precision.FLOAT16
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the tracer's notices
                traced = torch.jit.trace(wrapped, sample_inputs(shape, 1, seed=0))
                package = ct.convert(traced, inputs=[ct.TensorType(name="input", shape=(1, *shape))],
                                     outputs=[ct.TensorType(name="logits")], convert_to="mlprogram",
                                     compute_precision=chosen)
        except Exception as exc:
            raise FormatRefused(f"the network cannot be converted to Core ML: {type(exc).__name__}: "
                                f"{(str(exc).strip().splitlines() or [''])[0][:300]}") from exc
        data = _zipped(package)
        script = runtime_script()
        details = {"precision": precision, "runtime": f"coremltools {ct.__version__}", "batch": 1,
                   "package": "model.mlpackage (ML Program), zipped"}
        checked = runs_here()
        if checked:
            details["check_compute_units"] = "CPU_ONLY"
        return Converted(MEMBER, data, runner(data) if checked else None, details, {"use_archive.py": script},
                         not_checked_because="" if checked else NOT_HERE)
    return convert


def _zipped(package: MLModel) -> bytes:
    """The saved .mlpackage folder as a stored zip whose members are model.mlpackage/...."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="trainyard-coreml-") as tmp:
        folder = Path(tmp) / "model.mlpackage"
        package.save(str(folder))
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                archive.write(path, path.relative_to(tmp).as_posix())
    return buffer.getvalue()


def runner(data: bytes) -> Runner:
    """The package on the CPU (Core ML sets its own threads), one image at a time: macOS only."""
    ct = _coremltools()
    folder = tempfile.TemporaryDirectory(prefix="trainyard-coreml-")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(folder.name)
    model = ct.models.MLModel(str(Path(folder.name) / "model.mlpackage"), compute_units=ct.ComputeUnit.CPU_ONLY)

    def run(x: np.ndarray) -> np.ndarray:
        _ = folder  # the unpacked package lives as long as the runner
        return np.concatenate([np.asarray(model.predict({"input": x[i:i + 1].astype(np.float32)})["logits"])
                               for i in range(len(x))])
    return run


COREML = Exporter("coreml", "Core ML ML Program fp32 for Apple devices (converted anywhere, checked on macOS)",
                  ("coremltools",), INSTALL, converter("fp32"), runs_here=runs_here)
COREML_FP16 = Exporter("coreml-fp16", "Core ML ML Program fp16 for Apple devices and their Neural Engine "
                       "(converted anywhere, checked on macOS)", ("coremltools",), INSTALL, converter("fp16"),
                       runs_here=runs_here)
