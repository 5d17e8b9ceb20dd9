"""The ``torchscript`` format: the network traced to TorchScript (model.pt), run by PyTorch alone.

Traced, not scripted: trainyard's networks (and users') are plain feed-forward modules, and a
trace records exactly the computation the check compares. The archive's use_archive.py is
examples/runtimes' (PyTorch, numpy and Pillow here; the preprocessing is example.py's).
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import torch

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.exporters.base import Conversion, Converted, Exporter, FormatRefused, Runner, runtime_script
from trainyard.inference.onnx_export import _Logits, sample_inputs


def convert(conversion: Conversion) -> Converted:
    shape = Preprocessing.of_checkpoint(conversion.checkpoint).input_shape
    wrapped = _Logits(conversion.model.eval()).eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notices
        try:
            torch.jit.save(torch.jit.trace(wrapped, sample_inputs(shape, 2, seed=0)), buffer)
        except Exception as exc:
            raise FormatRefused(f"the network cannot be traced to TorchScript: {type(exc).__name__}: "
                                f"{(str(exc).strip().splitlines() or [''])[0][:300]}") from exc
    data = buffer.getvalue()
    script = runtime_script()
    return Converted("model.pt", data, runner(data), {"precision": "fp32", "runtime": f"torch {torch.__version__}"},
                     {"use_archive.py": script})


def runner(data: bytes) -> Runner:
    """The TorchScript module, run on one thread (the figures' latency), as a Runner."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notice: TorchScript is the format
        module = torch.jit.load(io.BytesIO(data), map_location="cpu").eval()

    def run(x: np.ndarray) -> np.ndarray:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                return module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy()
        finally:
            torch.set_num_threads(threads)
    return run


TORCHSCRIPT = Exporter("torchscript", "TorchScript fp32 for PyTorch (LibTorch in C++)", ("torch",),
                       "pip install torch", convert)
