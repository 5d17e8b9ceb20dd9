"""The ``executorch`` format: a .pte program for ExecuTorch, lowered to its XNNPACK backend (the CPUs
of phones, Raspberry Pis and x86 machines).

torch.export captures the network (the `_Logits` wrapper the other formats take: the main output
only); to_edge_transform_and_lower hands XNNPACK every part it takes (the rest runs on ExecuTorch's
portable kernels) and to_executorch writes the program. Its input is one image (batch 1, static):
ExecuTorch 1.5.1 lowers a convolution to XNNPACK with a dynamic batch bounded far below the one
asked (15 for 64, measured), and a device classifies an image at a time. The check runs the .pte
through ExecuTorch's Python runtime, image by image, on one thread of its pool.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import torch

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.exporters.base import Conversion, Converted, Exporter, FormatRefused, Runner, runtime_script
from trainyard.inference.onnx_export import _Logits, sample_inputs

INSTALL = "pip install 'trainyard[executorch]'"
# ExecuTorch's thread pool is the process's own: resized to one thread (the figures' latency) and
# used by one run at a time, since resizing it under a running program is unsafe.
_POOL = threading.Lock()


def convert(conversion: Conversion) -> Converted:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExecuTorch's "experimental API" notices on import
        try:
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
            from executorch.exir import to_edge_transform_and_lower
            from executorch.version import __version__
        except ImportError as exc:  # executorch without one of its own dependencies (torchao ...)
            raise FormatRefused(f"the executorch format cannot load ExecuTorch ({exc}): {INSTALL}") from exc
    shape = Preprocessing.of_checkpoint(conversion.checkpoint).input_shape
    wrapped = _Logits(conversion.model.eval()).eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            program = torch.export.export(wrapped, (sample_inputs(shape, 1, seed=0),))
            data = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
    except Exception as exc:
        raise FormatRefused(f"the network cannot be lowered to ExecuTorch: {type(exc).__name__}: "
                            f"{(str(exc).strip().splitlines() or [''])[0][:300]}") from exc
    script = runtime_script()
    return Converted("model.pte", data, runner(data),
                     {"precision": "fp32", "runtime": f"executorch {__version__}", "backend": "XNNPACK", "batch": 1},
                     {"use_archive.py": script})


def runner(data: bytes) -> Runner:
    """The program's forward method in ExecuTorch's runtime, one image at a time on one thread."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import executorch.extension.pybindings.portable_lib as portable
        from executorch.runtime import Runtime

    method = Runtime.get().load_program(data).load_method("forward")
    if method is None:
        raise FormatRefused("the ExecuTorch program has no forward method")

    def run(x: np.ndarray) -> np.ndarray:
        images = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        with _POOL:
            if portable._threadpool_get_thread_count() != 1:
                portable._unsafe_reset_threadpool(1)
            # Its Python runtime takes torch tensors, and returns them.
            return np.concatenate([method.execute([images[i:i + 1]])[0].numpy() for i in range(len(images))])
    return run


EXECUTORCH = Exporter("executorch", "ExecuTorch .pte fp32 with the XNNPACK backend (phones, Raspberry Pi, x86)",
                      ("executorch",), INSTALL, convert)
