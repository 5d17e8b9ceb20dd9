"""A network as ONNX (dynamic batch), checked against PyTorch with ONNX Runtime before it ships.

The export uses PyTorch's TorchScript-based exporter: it needs nothing beyond torch and onnx,
and for the same weights it writes the same bytes every time (the archive is reproducible).
Where that exporter is gone (newer PyTorch), the torch.export-based one is used instead.

`check_onnx` runs the exported graph in ONNX Runtime on fixed sample inputs, at batch sizes
other than the one traced (so the dynamic batch dimension is exercised too), and compares the
logits with PyTorch's; a disagreement beyond the tolerance is an `ExportError` with the figures.
"""

from __future__ import annotations

import copy
import io
import math
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from trainyard.core.errors import InvalidInput
from trainyard.networks import main_output

OPSET = 17
INPUT_NAME = "input"
OUTPUT_NAME = "logits"
CHECK_BATCHES = (1, 3)  # the trace uses 2: other sizes prove the batch dimension is dynamic
ATOL, RTOL = 1e-4, 1e-3
# The TorchScript exporter keeps global state: one export at a time in a threaded server.
_EXPORT_LOCK = threading.Lock()


class ExportError(InvalidInput, RuntimeError):
    """A model that cannot be exported, or whose ONNX graph does not give PyTorch's answers."""


class _Logits(nn.Module):
    """The network's main output only (auxiliary heads are training-time extras)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return main_output(self.model(x))


class _FixedAdaptiveAvgPool(nn.Module):
    """AdaptiveAvgPool2d for one known input size, as two averaging matrices.

    ONNX has no adaptive pooling: the TorchScript exporter only handles output sizes that divide
    the input size. Output cell i averages input rows floor(i * H / oh) .. ceil((i + 1) * H / oh),
    which is exactly ``Ph @ x @ Pw^T``; the batch stays dynamic.
    """

    rows: torch.Tensor  # buffers: declared, as nn.Module's __getattr__ is typed Tensor | Module
    cols: torch.Tensor

    def __init__(self, in_size: tuple[int, int], out_size: tuple[int, int]):
        super().__init__()
        self.register_buffer("rows", _averaging_matrix(in_size[0], out_size[0]))
        self.register_buffer("cols", _averaging_matrix(in_size[1], out_size[1]).t().contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.rows, torch.matmul(x, self.cols))


def _averaging_matrix(size: int, out: int) -> torch.Tensor:
    matrix = torch.zeros(out, size)
    for i in range(out):
        start, end = (i * size) // out, math.ceil((i + 1) * size / out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def exportable(model: nn.Module, example: torch.Tensor) -> nn.Module:
    """``model``, or a copy whose adaptive average pools ONNX cannot express are replaced."""
    sizes: dict[str, tuple[int, int]] = {}

    def record(name: str) -> Callable[[nn.Module, tuple[torch.Tensor, ...]], None]:
        def hook(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            height, width = args[0].shape[-2:]
            sizes.setdefault(name, (height, width))
        return hook

    hooks = [module.register_forward_pre_hook(record(name)) for name, module in model.named_modules()
             if isinstance(module, nn.AdaptiveAvgPool2d)]
    try:
        with torch.no_grad():
            model(example)
    finally:
        for hook in hooks:
            hook.remove()
    swaps = {}
    for name, in_size in sizes.items():
        pool = model.get_submodule(name)
        assert isinstance(pool, nn.AdaptiveAvgPool2d)  # only those were recorded
        oh, ow = (o if o is not None else i for o, i in zip(_pair(pool.output_size), in_size))
        if in_size[0] % oh or in_size[1] % ow:
            swaps[name] = _FixedAdaptiveAvgPool(in_size, (oh, ow))
    if not swaps:
        return model
    model = copy.deepcopy(model)
    for name, module in swaps.items():
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, module)
    return model


def _pair(value: int | None | Sequence[int | None]) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


@dataclass
class CheckResult:
    """How closely ONNX Runtime matched PyTorch on the sample inputs."""

    max_abs_diff: float
    max_abs_logit: float
    atol: float
    rtol: float
    batches: tuple[int, ...]

    def as_dict(self) -> dict:
        return {"max_abs_diff": self.max_abs_diff, "max_abs_logit": self.max_abs_logit,
                "atol": self.atol, "rtol": self.rtol, "batch_sizes": list(self.batches)}


def sample_inputs(shape: tuple[int, int, int], batch: int, seed: int) -> torch.Tensor:
    """Fixed pseudo-random network inputs (N, C, h, w) in the range preprocessing gives (-1..1)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((batch, *shape), generator=generator) * 2 - 1


def export_onnx(model: nn.Module, input_shape: tuple[int, int, int]) -> bytes:
    """The eval-mode ``model`` as ONNX bytes, input (batch, C, h, w) -> logits (batch, classes)."""
    example = sample_inputs(input_shape, 2, seed=0)
    wrapped = _Logits(exportable(model.eval(), example)).eval()
    buffer = io.BytesIO()
    with _EXPORT_LOCK, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's deprecation and tracer notices
        try:
            _export(wrapped, example, buffer)
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            raise ExportError(f"the network cannot be exported to ONNX: {type(exc).__name__}: "
                              f"{first_line}") from exc
    return buffer.getvalue()


def torchscript_export(model: nn.Module, example: torch.Tensor, buffer: io.BytesIO, input_names: Sequence[str],
                       output_names: Sequence[str], dynamic_axes: Mapping[str, Mapping[int, str]]) -> None:
    """``model`` traced on ``example`` by torch.onnx's TorchScript exporter, written to ``buffer``."""
    torch.onnx.export(model, (example,), buffer,  # type: ignore[arg-type]  # stub: f a path; a binary file works
                      input_names=input_names, output_names=output_names, opset_version=OPSET,
                      dynamo=False, do_constant_folding=True, dynamic_axes=dynamic_axes)


def _export(model: nn.Module, example: torch.Tensor, buffer: io.BytesIO) -> None:
    try:
        torchscript_export(model, example, buffer, [INPUT_NAME], [OUTPUT_NAME],
                           {INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})
    except (TypeError, NotImplementedError, AttributeError):
        # A PyTorch without the TorchScript exporter: torch.export's, with a dynamic batch.
        buffer.seek(0)
        buffer.truncate()
        batch = torch.export.Dim("batch")
        program = torch.onnx.export(model, (example,), dynamo=True, dynamic_shapes=({0: batch},),
                                    input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                                    opset_version=OPSET)
        assert program is not None  # dynamo=True without a file returns the program
        buffer.write(program.model_proto.SerializeToString())


def check_onnx(onnx_bytes: bytes, model: nn.Module, input_shape: tuple[int, int, int]) -> CheckResult:
    """Compare ONNX Runtime's logits with PyTorch's; ExportError with the figures if they differ."""
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    wrapped = _Logits(model).eval()
    worst_diff = worst_logit = 0.0
    for batch in CHECK_BATCHES:
        x = sample_inputs(input_shape, batch, seed=batch)
        with torch.no_grad():
            expected = wrapped(x).float().numpy()
        got = session.run([OUTPUT_NAME], {INPUT_NAME: x.numpy()})[0]
        if got.shape != expected.shape:
            raise ExportError(f"ONNX Runtime gave logits of shape {got.shape} for a batch of {batch}; "
                              f"PyTorch gave {expected.shape}")
        diff = np.abs(got.astype(np.float64) - expected)
        worst_diff = max(worst_diff, float(diff.max()))
        worst_logit = max(worst_logit, float(np.abs(expected).max()))
        if not np.all(diff <= ATOL + RTOL * np.abs(expected)):
            raise ExportError(
                f"ONNX Runtime and PyTorch disagree on the logits (batch of {batch}): largest "
                f"difference {float(diff.max()):.3g} for logits up to {worst_logit:.3g}; allowed "
                f"{ATOL:g} + {RTOL:g} x |logit|. The export is refused rather than shipping a model "
                "that answers differently.")
    return CheckResult(worst_diff, worst_logit, ATOL, RTOL, CHECK_BATCHES)
