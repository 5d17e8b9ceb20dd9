"""CPU forward passes through ONNX Runtime: the snapshot's verified ONNX export, cached beside it.

On a CPU, ONNX Runtime runs these networks several times faster than eager PyTorch and holds
far less memory. The preprocessing is unchanged (artifact/inputs.py builds the input array);
only the forward pass moves. The graph is exported once per snapshot, checked against PyTorch
by `check_onnx` (the same check a downloaded archive passes), and written atomically next to
the checkpoint as ``epoch-NNNN.pt.onnx``, with ``epoch-NNNN.pt.inputs.npz`` beside it: the
classes, the preprocessing entry and its mean and std constants. The job folder is the job's to
write, so a later process reuses the pair only when their SHA-256 are the ones this side recorded
for that checkpoint's bytes in the trust ledger (trust.py, outside the job folder): a forged or
stale file is ignored and rebuilt. Then it classifies without reading the checkpoint or importing
torch (`cached_inputs`).

Anything that goes wrong (an exporter that refuses the network, a check that fails, a read-only
folder) is logged with its reason, and the caller keeps PyTorch: a slower answer, never a
different or missing one. ``TRAINYARD_INFERENCE_RUNTIME=torch`` turns the ONNX path off.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core import jobfiles
from trainyard.core.files import write_atomic
from trainyard.inference import trust
from trainyard.settings import process_settings

if TYPE_CHECKING:
    from torch import nn

log = logging.getLogger(__name__)
SUFFIX = ".onnx"
MAX_CACHED_BYTES = 4 << 30  # above any network the CPU runtime serves; a hash mismatch past it
INPUTS_SUFFIX = ".inputs.npz"
RUNTIME_ENV = "TRAINYARD_INFERENCE_RUNTIME"  # "onnx" (default on a CPU) or "torch"


class OrtForward:
    """A loaded ONNX Runtime session: float32 (N, C, h, w) inputs -> (N, classes) logits."""

    def __init__(self, onnx: bytes | str):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: its notices are not for users
        # Idle ONNX Runtime threads spin by default, taking the cores that decode the next images
        # (classify-many) or answer other requests (the server): 1,040 -> 1,380 images/s for a
        # LeNet classify-many on 2 cores with spinning off (bench/app/startup.py's images).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
        # The graph's own names (onnx_export's INPUT_NAME and OUTPUT_NAME), read without torch.
        self.input, self.output = self.session.get_inputs()[0].name, self.session.get_outputs()[0].name

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self.session.run([self.output], {self.input: np.ascontiguousarray(inputs, np.float32)})[0]


@dataclass
class Inputs:
    """What feeds a cached export: the checkpoint's facts (classes, preprocess without the mean
    image, epoch, network, spec: JSON) and its input constants (artifact/inputs.py)."""

    about: dict
    mean: np.ndarray | None
    std: np.ndarray | None


def onnx_path(checkpoint: Path) -> Path:
    """Where the ONNX export of ``checkpoint`` is cached: beside it, ``<name>.onnx``."""
    return checkpoint.with_name(checkpoint.name + SUFFIX)


def inputs_path(checkpoint: Path) -> Path:
    """Where the export's `Inputs` are cached: beside it, ``<name>.inputs.npz``."""
    return checkpoint.with_name(checkpoint.name + INPUTS_SUFFIX)


def cached_inputs(checkpoint: Path, sha: str | None = None, record: dict | None = None) -> Inputs | None:
    """The `Inputs` of the cached export of ``checkpoint`` when the trust ledger vouches for them,
    or None (then the checkpoint is read with torch). ``sha`` and ``record`` are the checkpoint's
    hash and ledger record when the caller has them. Reads no checkpoint and imports no torch;
    `ort_forward` then opens the graph when the first images come (a job forks its image
    decoders before that). The network's name comes from the ledger, never from the file."""
    if not wanted():
        return None
    sha, record = _vouched(checkpoint, sha, record)
    data = _verified(inputs_path(checkpoint), record.get("inputs"))
    if data is None or not record.get("network"):
        return None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as saved:  # arrays and text: nothing unpickled
            about = {**json.loads(str(saved["about"])), "network": record["network"]}
            return Inputs(about, _optional(saved, "mean"), _optional(saved, "std"))
    except Exception as exc:  # a damaged cache file: the caller reads the checkpoint instead
        log.info("cached inputs of %s unreadable (%s); reading the checkpoint", checkpoint.name, exc)
        return None


def cached_graph(checkpoint: Path, sha: str | None = None, record: dict | None = None) -> bytes | None:
    """The cached ONNX export of ``checkpoint`` when the trust ledger vouches for it (an archive
    reuses it), else None."""
    if not wanted():
        return None
    sha, record = _vouched(checkpoint, sha, record)
    return _verified(onnx_path(checkpoint), record.get("onnx"))


def is_cached(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` has a cached export and inputs, both as the ledger recorded them."""
    if not wanted():
        return False
    sha, record = _vouched(checkpoint, None, None)
    return all(_verified(path, record.get(key)) is not None
               for path, key in ((onnx_path(checkpoint), "onnx"), (inputs_path(checkpoint), "inputs")))


def _vouched(checkpoint: Path, sha: str | None, record: dict | None) -> tuple[str, dict]:
    if sha is None:
        try:
            sha = trust.digest(checkpoint)
        except OSError:
            return "", {}
    return sha, trust.recall(checkpoint, sha) if record is None else record


def _verified(path: Path, expected: str | None) -> bytes | None:
    """The bytes of ``path`` when they hash to ``expected``; None when missing, forged or stale."""
    if not expected:
        return None
    try:  # beneath its folder, no link, no FIFO (core/jobfiles.py): the job's folder
        data = jobfiles.read_bytes(path.parent, path.name, MAX_CACHED_BYTES)
    except OSError:
        return None
    if trust.digest_bytes(data) != expected:
        log.info("%s is not the file this side cached (forged or stale); ignored", path.name)
        return None
    return data


def _optional(saved: np.lib.npyio.NpzFile, key: str) -> np.ndarray | None:
    return saved[key] if key in saved.files else None


def _inputs_bytes(inputs: Inputs) -> bytes:
    # Any: numpy's stub reads a ** mapping as possibly holding savez's allow_pickle flag.
    arrays: dict[str, Any] = {"about": np.array(json.dumps(inputs.about))}
    arrays.update((key, value) for key, value in (("mean", inputs.mean), ("std", inputs.std)) if value is not None)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def wanted() -> bool:
    """Whether the ONNX path is on (the environment may ask for PyTorch only)."""
    return process_settings().inference_runtime.strip().lower() != "torch"


def ort_forward(checkpoint: Path, model: Callable[[], nn.Module], inputs: Inputs, sha: str | None = None,
                record: dict | None = None) -> OrtForward | None:
    """The ONNX Runtime forward pass of a CPU model, or None (logged) where PyTorch must answer.

    Opens the cached graph when the ledger vouches for it; otherwise exports ``model()`` (read
    only then), caches the graph and its `Inputs` and records their hashes in the ledger."""
    sha, record = _vouched(checkpoint, sha, record)
    graph = cached_graph(checkpoint, sha, record)
    if graph is not None:
        try:
            forward = OrtForward(graph)
            _cache_inputs(checkpoint, inputs, sha, record)
            return forward
        except Exception as exc:  # a damaged cache file: export again
            log.info("cached ONNX export of %s unreadable (%s); exporting again", checkpoint.name, exc)
    try:
        data = _exported(model(), Preprocessing.from_dict(inputs.about["preprocess"]).input_shape)
        forward = OrtForward(data)
    except Exception as exc:  # any failure means PyTorch answers; the reason goes to the log
        log.warning("ONNX Runtime not used for %s, PyTorch answers instead: %s: %s",
                    checkpoint.name, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        return None
    if _cache(onnx_path(checkpoint), data) and sha:
        trust.remember(checkpoint, sha, onnx=trust.digest_bytes(data))
    _cache_inputs(checkpoint, inputs, sha, {})
    return forward


def _exported(model: nn.Module, shape: tuple[int, int, int]) -> bytes:
    """A newly exported and checked graph."""
    from trainyard.inference.onnx_export import check_onnx, export_onnx

    data = export_onnx(model, shape)
    check_onnx(data, model, shape)  # raises ExportError with the figures if ORT disagrees
    return data


def _cache(path: Path, data: bytes) -> bool:
    try:
        write_atomic(path, lambda f: f.writelines([data]))
        return True
    except OSError as exc:  # a read-only folder: use it this time, export again next time
        log.info("%s not cached: %s", path.name, exc)
        return False


def _cache_inputs(checkpoint: Path, inputs: Inputs, sha: str, record: dict) -> None:
    if not sha or _verified(inputs_path(checkpoint), record.get("inputs")) is not None:
        return
    data = _inputs_bytes(inputs)
    if _cache(inputs_path(checkpoint), data):
        trust.remember(checkpoint, sha, inputs=trust.digest_bytes(data))
