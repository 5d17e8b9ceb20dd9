"""Export formats: a registry of exporters, each a copy of the model checked against PyTorch.

`export_format(job_dir, epoch, fmt, output)` writes the archive of one format: the classifier's
archive (inference/export.py: scripts, preprocessing, labels, weights) with its model.onnx the
format's copy, and ``manifest.json``, the check's figures (figures.py): agreement with PyTorch,
accuracy of both, ``size_bytes`` beside the fp32 graph's ``reference_size_bytes``, latency at one
thread beside fp32's. The archive is written only once the check passes: nothing half-written.
A format is one module (onnx_formats.py ...) and one entry in FORMATS.
"""

from __future__ import annotations

from trainyard.inference.exporters.base import Exporter, FormatRefused
from trainyard.inference.exporters.coreml_package import COREML, COREML_FP16
from trainyard.inference.exporters.executorch_pte import EXECUTORCH
from trainyard.inference.exporters.onnx_formats import ONNX, ONNX_INT8
from trainyard.inference.exporters.openvino_ir import OPENVINO
from trainyard.inference.exporters.torchscript import TORCHSCRIPT
from trainyard.inference.exporters.unavailable import UNAVAILABLE

BUILT = (ONNX, ONNX_INT8, TORCHSCRIPT, OPENVINO, EXECUTORCH, COREML, COREML_FP16)
# The refusals after: a format built here is listed once, as built.
FORMATS: dict[str, Exporter] = {e.name: e for e in (*BUILT, *(u for u in UNAVAILABLE
                                                               if u.name not in {b.name for b in BUILT}))}
DEFAULT_FORMAT = ONNX.name


def exporter(name: str) -> Exporter:
    """The registered format ``name``; FormatRefused listing the formats otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatRefused(f"unknown export format {name!r}: choose one of {', '.join(FORMATS)}") from None


__all__ = ["DEFAULT_FORMAT", "FORMATS", "Exporter", "FormatRefused", "exporter"]
