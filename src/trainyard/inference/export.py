"""Download and deploy: one .tar.gz that runs a model anywhere and gives the server's answers.

`export_model` turns one checkpoint of a model job into an archive with a single top folder:

    README.md          what is inside and how to run it
    info.json          job, dataset, epoch, metrics, versions, creation time, ONNX check, sha256s
    preprocess.json    size, channels, resize mode, mean mode, crop, channel order, scaling
    labels.txt         class names in output order
    mean.npy, mean.png the training mean image (H, W, C), 0..255
    model.onnx         the network, batch dimension dynamic; checked against PyTorch on export
    weights.safetensors, network.py   to reload or fine-tune in PyTorch (or import in trainyard)
    example.py, use_archive.py        numpy + Pillow + onnxruntime scripts (examples/classification)

The archive is reproducible: fixed member order, every member dated by the checkpoint file,
owner 0, gzip header without name or time, a deterministic ONNX export. Two exports of one
epoch differ only in info.json's ``created``. export_documents.py writes preprocess.json and
info.json, export_tar.py the .tar.gz.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import torch

import trainyard
from trainyard.artifact.checkpoint import (
    CheckpointHeader,
    build_model_from_checkpoint,
    checkpoint_epochs,
    checkpoint_for_epoch,
    load_checkpoint,
)
from trainyard.artifact.normalize import mean_image
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.files import write_atomic
from trainyard.core.paths import JobFolder, checkpoint_epoch
from trainyard.datasets.images import png_bytes
from trainyard.inference import onnx_export, ort_runtime
from trainyard.inference.archive_readme import archive_stem, readme_text
from trainyard.inference.detection import archive as detection_archive
from trainyard.inference.export_documents import info_document, preprocess_document
from trainyard.inference.export_tar import write_tar_gz
from trainyard.inference.segmentation import archive as segmentation_archive
from trainyard.inference.snapshots import best_epoch
from trainyard.networks import network_source

SCRIPTS = ("example.py", "use_archive.py")


@dataclass
class ExportResult:
    """An archive written by `export_model`."""

    path: Path
    epoch: float
    size: int
    members: list[str] = field(default_factory=list)
    check: dict = field(default_factory=dict)  # the ONNX Runtime vs PyTorch figures


def export_model(job_dir: str | os.PathLike, epoch: float | None, output: str | os.PathLike,
                 force: bool = False) -> ExportResult:
    """Write the archive of ``epoch`` (None: the latest) of the model job in ``job_dir``.

    Raises CheckpointError when the job has no such snapshot, ExportError when the network
    cannot be exported or ONNX Runtime disagrees with PyTorch (a detector's: unless ``force``).
    """
    checkpoint_path = checkpoint_for_epoch(job_dir, epoch)
    checkpoint = load_checkpoint(checkpoint_path)
    members, check = archive_members(checkpoint, checkpoint_path, force)
    top = archive_stem(checkpoint)
    mtime = int(checkpoint_path.stat().st_mtime)
    write_atomic(output, lambda f: write_tar_gz(f, top, members, mtime))
    return ExportResult(Path(output), CheckpointHeader.of(checkpoint).epoch, Path(output).stat().st_size,
                        [f"{top}/{name}" for name, _, _ in members], check)


def cached_export(job_dir: str | os.PathLike, epoch: float | None = None, *,
                  build: Callable[[Path, float, Path], object] | None = None) -> Path:
    """The archive of ``epoch`` (None: the best snapshot) kept in the server's part of the job
    folder (core/paths.py: the job cannot write there), built on first use (or when stale).

    ``build(job_dir, epoch, output)`` writes it (export_model by default; the server passes
    export_isolated.export_in_child, since the network may be user code).
    """
    if epoch is None:  # the best snapshot by the task's metric (snapshots.py), else the latest
        best = best_epoch(job_dir, set(checkpoint_epochs(job_dir)))
        epoch = best[0] if best else None
    checkpoint_path = checkpoint_for_epoch(job_dir, epoch)
    path = JobFolder(job_dir).exports / f"{checkpoint_path.stem}-trainyard-{trainyard.__version__}.tar.gz"
    # A resumed job may write an epoch's checkpoint again: an older archive is then stale.
    if not path.is_file() or path.stat().st_mtime < checkpoint_path.stat().st_mtime:
        (build or export_model)(Path(job_dir), _epoch_of(checkpoint_path), path)
    return path


def _epoch_of(checkpoint_path: Path) -> float:
    epoch = checkpoint_epoch(checkpoint_path)
    assert epoch is not None, checkpoint_path  # checkpoint_for_epoch finds checkpoint_name files only
    return float(epoch)


def archive_members(checkpoint: dict, checkpoint_path: Path,
                    force: bool = False) -> tuple[list[tuple[str, bytes, int]], dict]:
    """[(name, bytes, mode), ...] in archive order, and the ONNX check figures."""
    prep = Preprocessing.of_checkpoint(checkpoint)
    model = build_model_from_checkpoint(checkpoint)
    header = CheckpointHeader.of(checkpoint)
    own_files = TASK_FILES.get(header.task)
    if own_files is not None:  # boxes or masks: their own graph, preprocess.json and scripts
        files, check = own_files(checkpoint, model, force)
        files.update({"weights.safetensors": safetensors_bytes(model), "network.py": network_file(checkpoint).encode()})
        return _ordered(checkpoint, prep, checkpoint_path, check, files), check
    shape = prep.input_shape
    # Classify exported this snapshot already, most often: the same exporter, the same bytes.
    onnx_bytes = ort_runtime.cached_graph(checkpoint_path) or onnx_export.export_onnx(model, shape)
    check = onnx_export.check_onnx(onnx_bytes, model, shape).as_dict()  # the archive's own figures
    mean = mean_image(prep)
    files = {
        "preprocess.json": _json(preprocess_document(checkpoint, prep)),
        "labels.txt": "".join(f"{name}\n" for name in header.classes).encode(),
        "mean.npy": _npy(mean),
        "mean.png": _png(mean),
        "model.onnx": onnx_bytes,
        "weights.safetensors": safetensors_bytes(model),
        "network.py": network_file(checkpoint).encode(),
        **{name: script_source(name) for name in SCRIPTS},
    }
    return _ordered(checkpoint, prep, checkpoint_path, check, files), check


# The tasks whose archives hold their own graph and scripts (core/tasks.py names the tasks), each
# with its files; a classifier's are archive_members' own.
TASK_FILES = {"detection": detection_archive.detection_files, "segmentation": segmentation_archive.segmentation_files}


def _ordered(checkpoint: dict, prep: Preprocessing, checkpoint_path: Path, check: dict,
             files: dict[str, bytes]) -> list[tuple[str, bytes, int]]:
    info = info_document(checkpoint, prep, checkpoint_path, check, files)
    readme = readme_text(checkpoint, info).encode()
    ordered = [("README.md", readme), ("info.json", _json(info)), *files.items()]
    return [(name, data, 0o755 if name in SCRIPTS else 0o644) for name, data in ordered]


def network_file(checkpoint: dict) -> str:
    """The network's source: the custom file, or the standard network as a stand-alone file."""
    header = CheckpointHeader.of(checkpoint)
    return header.network_source or network_source(header.network or "")  # one of the two is set


def safetensors_bytes(model: torch.nn.Module) -> bytes:
    from safetensors.torch import save

    # Clones: safetensors refuses tensors that share memory (tied weights) or are views.
    tensors = {name: t.detach().cpu().contiguous().clone() for name, t in model.state_dict().items()}
    return save(tensors, metadata={"format": "pt"})


def script_source(name: str) -> bytes:
    """A packaged example script (src/trainyard/examples/classification)."""
    return (resources.files("trainyard") / "examples" / "classification" / name).read_bytes()


def _json(doc: dict) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, default=_plain) + "\n").encode()


def _plain(value: object) -> object:
    """Numbers held as tensors or numpy scalars (metrics) as plain JSON numbers."""
    if isinstance(value, (torch.Tensor, np.generic)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _png(mean: np.ndarray) -> bytes:
    """mean.png: the mean image to look at (an N-channel model's: its first channel)."""
    shown = mean if mean.shape[2] in (1, 3) else mean[:, :, :1]
    return png_bytes(np.clip(np.rint(shown), 0, 255).astype(np.uint8))
