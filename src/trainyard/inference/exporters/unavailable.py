"""The formats not yet built here, each a clear refusal naming what it needs (issue 44 plans them).

An `Exporter` whose converter refuses: the registry lists them, so `--format tensorrt` says what a
user would have to install or where to run it instead of "no such format".
"""

from __future__ import annotations

from trainyard.inference.exporters.base import Conversion, Converted, Exporter, FormatRefused


def _refuse(name: str, needs: str) -> Exporter:
    def convert(_: Conversion) -> Converted:
        raise FormatRefused(f"the {name} format is not built by this trainyard yet: it needs {needs}; "
                            "export to onnx or onnx-int8 instead")
    return Exporter(name, f"{name} (not built yet: needs {needs})", (), needs, convert)


UNAVAILABLE = (
    _refuse("tflite", "LiteRT (litert-torch to convert, in an environment of its own; ai-edge-litert to run)"),
    _refuse("tensorrt", "an NVIDIA GPU with TensorRT on the machine that builds and runs the engine"),
)
