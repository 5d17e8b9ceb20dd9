"""The ``openvino`` format: OpenVINO IR (model.xml + model.bin) in fp32, for Intel CPUs, GPUs and NPUs.

Converted from the checked fp32 ONNX graph. Two OpenVINO defaults would hide precision: saving
compresses weights to fp16 unless told not to, and a CPU with AMX runs an fp32 model in bf16 (a
logit difference of 0.48 measured on ResNet-18) unless the precision hint is f32. The IR is saved
uncompressed and the check, like the archive's script, compiles it with the f32 hint.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from trainyard.inference.exporters.base import Conversion, Converted, Exporter, Runner, runtime_script

CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}  # what the script compiles with too


def convert(conversion: Conversion) -> Converted:
    import openvino as ov

    with tempfile.TemporaryDirectory(prefix="trainyard-openvino-") as tmp:
        source = Path(tmp) / "model.onnx"
        source.write_bytes(conversion.onnx_fp32)
        ov.save_model(ov.convert_model(str(source)), str(Path(tmp) / "model.xml"), compress_to_fp16=False)
        xml, weights = (Path(tmp) / "model.xml").read_bytes(), (Path(tmp) / "model.bin").read_bytes()
    script = runtime_script()
    return Converted("model.xml", xml, runner(xml, weights),
                     {"precision": "fp32", "runtime": f"openvino {ov.__version__}", "inference_precision_hint": "f32",
                      "weights_file": "model.bin", "weights_bytes": len(weights)},
                     {"use_archive.py": script, "model.bin": weights})


def runner(xml: bytes, weights: bytes) -> Runner:
    """The IR compiled for the CPU with the f32 hint, on one thread, as a Runner."""
    import openvino as ov

    core = ov.Core()
    model = core.read_model(xml.decode(), ov.Tensor(np.frombuffer(weights, np.uint8).copy()))
    compiled = core.compile_model(model, "CPU", {**CONFIG, "INFERENCE_NUM_THREADS": 1})
    request = compiled.create_infer_request()

    def run(x: np.ndarray) -> np.ndarray:
        return np.array(request.infer([np.ascontiguousarray(x, dtype=np.float32)])[0])
    return run


OPENVINO = Exporter("openvino", "OpenVINO IR fp32 for Intel CPUs, GPUs and NPUs", ("openvino",),
                    "pip install 'trainyard[openvino]'", convert)
