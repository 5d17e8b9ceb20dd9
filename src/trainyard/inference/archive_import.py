"""Import an exported archive as a model: checked members, weights from safetensors only.

`read_model_archive` unpacks an archive (trainyard's own .tar.gz, or a zip/tar of the same files)
with the member checks of datasets.archive (no absolute paths, no ``..``, no links or devices,
bounded size), validates every file it uses, and returns a trainyard checkpoint dict rebuilt
from weights.safetensors, network.py, labels.txt, mean.npy and preprocess.json. model.onnx is
never read, and nothing is unpickled.

When network.py is exactly the source of the standard network named in info.json, the model is
recorded as that standard network (no code from the archive runs). Otherwise network.py is a
custom network, kept as data: it is built and run only in a child process (a file that hangs,
crashes or misbehaves cannot touch the caller), which reports its state dict's shapes; the
weights must fit them exactly. The network runs again only in job and model-worker processes.

The shapes come from the network check (networks/cache.py: the caller's warm checker, a running
server's for the CLI, or answers kept from before), a classifier's standard network's too, and
the weights' from the safetensors header: torch is needed only for the checkpoint, and its
import runs in the background from the start, beside the unpacking and the check (issue 31.3).
"""

from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from trainyard.artifact.checkpoint import FORMAT, CheckpointHeader
from trainyard.artifact.preprocessing import NO_MEAN
from trainyard.core.tasks import known_task, task_traits
from trainyard.datasets.archive import ArchiveError, member_names, safe_extract
from trainyard.datasets.sources import IMAGE_EXTENSIONS
from trainyard.inference.archive_files import (
    ArchiveImportError,
    read_archive_json,
    read_history,
    read_labels,
    read_mean,
    read_number,
    read_preprocess,
    read_thresholds,
)
from trainyard.inference.archive_weights import (
    Check,
    built_shapes,
    check_classes_fit,
    check_exactly,
    checks_quickly,
    pick_network,
    read_weights,
    state_shapes,
    weight_shapes,
)
from trainyard.networks.cache import NetworkCache

if TYPE_CHECKING:
    import numpy as np
    import torch

REQUIRED = ("weights.safetensors", "network.py", "labels.txt", "mean.npy", "preprocess.json")
DETECTION_REQUIRED = ("weights.safetensors", "network.py", "labels.txt", "preprocess.json")  # no mean
MAX_ARCHIVE_BYTES = 8 * 2**30  # unpacked; the largest torchvision networks are ~0.6 GB twice
MAX_MEMBERS = 100
# Weights barely compress (a float's low bits are noise): a model archive that unpacks to more
# than 20 times its size is a bomb, refused at the header that passes the bound (datasets/archive.py).
MAX_RATIO = 20


def read_model_archive(archive: str | os.PathLike, workdir: str | os.PathLike,
                       check_timeout_s: float | None = None, check: Check | None = None) -> dict:
    """Unpack ``archive`` into ``workdir`` (the caller deletes it) and return a checkpoint dict.

    network.py is checked by ``check`` (the caller's NetworkCache.check; else a check of this
    process's own), with its time limit (``check_timeout_s``: the server's setting; else
    TRAINYARD_CHECK_TIMEOUT_S or 900 s, which the largest timm networks fit, networks/isolated.py):
    building one takes minutes."""
    threading.Thread(target=importlib.import_module, args=("torch",), name="trainyard-torch-import",
                     daemon=True).start()  # needed at the end; meanwhile the archive is read and checked
    try:
        check_kind(member_names(Path(archive), MAX_MEMBERS + 1, MAX_RATIO))  # what it is, before how big it is
        root = safe_extract(Path(archive), Path(workdir), MAX_ARCHIVE_BYTES, MAX_MEMBERS, MAX_RATIO)
    except ArchiveError as exc:
        raise ArchiveImportError(f"archive refused: {exc}") from None
    task = known_task((root / "preprocess.json").is_file() and read_archive_json(root, "preprocess.json").get("task"))
    detection = task_traits(task).boxes
    required = DETECTION_REQUIRED if detection else REQUIRED
    missing = [name for name in required if not (root / name).is_file()]
    if missing:
        raise ArchiveImportError(f"not a trainyard model archive: {', '.join(missing)} missing "
                                 "(expected one folder holding the files of a downloaded model)")
    info = read_archive_json(root, "info.json") if (root / "info.json").is_file() else {}
    prep, image_size = read_preprocess(read_archive_json(root, "preprocess.json"))
    classes = read_labels(root / "labels.txt")
    mean = read_mean(root / "mean.npy", prep) if prep.mean_mode != NO_MEAN else None
    network, source = pick_network((root / "network.py").read_text(encoding="utf-8"), info.get("network"))
    if detection and source is not None:
        raise ArchiveImportError("a detector archive imports with a standard detection network only (its "
                                 "network.py is not one); custom detectors are not importable yet")
    shapes = weight_shapes(root / "weights.safetensors")
    if not detection:  # a detector's outputs are anchors x (classes + background), not classes
        check_classes_fit(shapes, len(classes))  # before anything is built: labels.txt alone sizes the network
    expected = (built_shapes(network, len(classes), prep.channels, image_size)
                if detection or (source is None and not checks_quickly(check)) else
                state_shapes(network, source, len(classes), prep.channels, image_size, check_timeout_s,
                              check or NetworkCache().check))
    check_exactly(expected, shapes)
    weights = read_weights(root / "weights.safetensors")  # torch, imported in the background meanwhile
    if mean is not None:
        prep = prep.replace(mean=_tensor(mean))
    best = info.get("best")
    header = CheckpointHeader(
        network=network, network_source=source, task=task,
        classes=classes, image_size=image_size, epoch=read_number(info.get("epoch"), 0),
        metrics=read_history(info.get("history")), best=best if isinstance(best, dict) else None,
        imported={k: info.get(k) for k in ("job", "dataset", "versions", "created")})
    return {"format": FORMAT, "model": {name: weights[name] for name in expected}, **header.entries(),
            "preprocess": prep.to_dict(), "optimizer": None, "scheduler": None, "scaler": None, "trainable": None,
            **read_thresholds(read_archive_json(root, "preprocess.json").get("thresholds"), len(classes))}


def check_kind(names: list[str]) -> None:
    """Refuse an archive of images (a dataset's) for what it is, whatever its size: a model
    archive holds weights.safetensors and network.py, and no images."""
    files = {PurePosixPath(name.replace("\\", "/")).name for name in names}
    images = sum(1 for name in files if PurePosixPath(name).suffix.lower() in IMAGE_EXTENSIONS)
    if images and not files & {"weights.safetensors", "network.py"}:
        raise ArchiveImportError(
            "not a trainyard model archive: it holds images and no weights.safetensors or network.py; "
            "to make a dataset of it, use New dataset → Upload an archive (or unpack it and run "
            "`trainyard dataset create --train-folder FOLDER`)")


def _tensor(array: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(array)


def describe_archive(checkpoint: dict) -> str:
    """One line for logs: what was imported."""
    header = CheckpointHeader.of(checkpoint)
    network = header.network or "custom network"
    origin = (header.imported or {}).get("job") or {}
    return (f"imported {network} with {len(header.classes)} classes, epoch {header.epoch:g}"
            + (f", from job {origin.get('id')}" if origin.get("id") else ""))

