"""Weights files read and written a tensor at a time: importing a user's file never holds it
(or a copy of it) in memory.

`open_tensors` gives a file's tensor names and shapes without reading their data: a
.safetensors file through ``safe_open`` (each tensor read when asked for), a torch file through
networks/state_dicts.py's memory-mapped ``torch.load``. `write_safetensors` writes the
safetensors format (an 8-byte little-endian header length, a JSON header of dtype, shape and
byte offsets, then the raw bytes) one tensor after another.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from trainyard.networks.state_dicts import WRAPPER_PREFIXES, NotWeights, read_state_dict

_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
           torch.uint8: "U8", torch.bool: "BOOL"}
_SIZES = {code: torch.empty((), dtype=dtype).element_size() for dtype, code in _DTYPES.items()}


@dataclass
class Tensors:
    """A weights file's tensors by (unwrapped) name: shapes now, data on demand."""

    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]  # safetensors' names: F32, BF16, I64, ...
    get: Callable[[str], torch.Tensor]

    def as_meta(self) -> dict[str, torch.Tensor]:
        """Data-less tensors of the right shapes, for shape checks (weights/fit.py)."""
        return {k: torch.empty(s, device="meta") for k, s in self.shapes.items()}


def open_tensors(path: Path) -> Tensors:
    """The tensors of ``path``; `NotWeights` when it holds none."""
    if path.suffix != ".safetensors":
        state = read_state_dict(path)  # memory-mapped: pages are read only when touched
        dtypes = {k: _DTYPES.get(v.dtype, str(v.dtype)) for k, v in state.items()}
        return Tensors({k: tuple(v.shape) for k, v in state.items()}, dtypes, state.__getitem__)
    from safetensors import safe_open

    try:
        handle = safe_open(str(path), framework="pt", device="cpu")
        names = {_unwrapped(k): k for k in handle.keys()}  # noqa: SIM118 (safe_open is no dict)
        slices = {k: handle.get_slice(raw) for k, raw in names.items()}
        shapes = {k: tuple(s.get_shape()) for k, s in slices.items()}
        dtypes = {k: s.get_dtype() for k, s in slices.items()}
    except Exception as exc:
        raise NotWeights(f"{path.name} is not a weights file ({type(exc).__name__})") from None
    if not shapes:
        raise NotWeights(f"{path.name} is not a weights file (it holds no tensors by name)")
    return Tensors(shapes, dtypes, lambda name: handle.get_tensor(names[name]))


def _unwrapped(name: str) -> str:
    for prefix in WRAPPER_PREFIXES:
        while name.startswith(prefix):
            name = name[len(prefix):]
    return name


def write_safetensors(names: Iterable[str], tensors: Tensors, path: Path) -> None:
    """Write ``names`` of ``tensors`` to ``path`` (atomically), reading one tensor at a time."""
    names = sorted(names)
    header: dict[str, dict] = {}
    offset = 0
    for name in names:
        dtype = _dtype_of(tensors, name)
        size = _numel(tensors.shapes[name]) * _SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": list(tensors.shapes[name]),
                        "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    try:
        with open(part, "wb") as out:
            out.write(struct.pack("<Q", len(encoded)))
            out.write(encoded)
            for name in names:
                _write_tensor(out, tensors.get(name), name, header[name]["dtype"])
    except BaseException:
        part.unlink(missing_ok=True)  # never leave half a file
        raise
    part.replace(path)


def _write_tensor(out, tensor: torch.Tensor, name: str, dtype: str) -> None:
    tensor = tensor.detach().cpu().contiguous()  # a copy of this one tensor at most
    if _DTYPES.get(tensor.dtype) != dtype:  # a file that lied in its header
        raise NotWeights(f"tensor {name} is not the {dtype} its header says")
    if tensor.numel():
        out.write(tensor.reshape(-1).view(torch.uint8).numpy().data)


def _dtype_of(tensors: Tensors, name: str) -> str:
    dtype = tensors.dtypes[name]
    if dtype not in _SIZES:
        raise NotWeights(f"tensor {name} has dtype {dtype}, which weights files here cannot hold")
    return dtype


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for n in shape:
        count *= n
    return count
