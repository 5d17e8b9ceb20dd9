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
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from trainyard.artifact.checkpoint import FORMAT, CheckpointHeader
from trainyard.artifact.preprocessing import NO_MEAN, Preprocessing, from_document
from trainyard.core.errors import UserError
from trainyard.core.files import read_json
from trainyard.core.tasks import known_task, task_traits
from trainyard.datasets.archive import ArchiveError, member_names, safe_extract
from trainyard.datasets.sources import IMAGE_EXTENSIONS
from trainyard.networks import UnknownNetwork, network_source
from trainyard.networks.cache import NetworkCache

if TYPE_CHECKING:
    import torch

# NetworkCache.check's signature: keyword arguments network, source, num_classes, in_channels,
# image_size, timeout; the check's answer ({"ok", "state": {name: shape}, ...}).
Check = Callable[..., dict]

REQUIRED = ("weights.safetensors", "network.py", "labels.txt", "mean.npy", "preprocess.json")
DETECTION_REQUIRED = ("weights.safetensors", "network.py", "labels.txt", "preprocess.json")  # no mean
MAX_ARCHIVE_BYTES = 8 * 2**30  # unpacked; the largest torchvision networks are ~0.6 GB twice
MAX_MEMBERS = 100
# Weights barely compress (a float's low bits are noise): a model archive that unpacks to more
# than 20 times its size is a bomb, refused at the header that passes the bound (datasets/archive.py).
MAX_RATIO = 20


class ArchiveImportError(UserError):
    """An archive that cannot be imported; the message says which file and why."""


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
    task = known_task((root / "preprocess.json").is_file() and _read_json(root, "preprocess.json").get("task"))
    detection = task_traits(task).boxes
    required = DETECTION_REQUIRED if detection else REQUIRED
    missing = [name for name in required if not (root / name).is_file()]
    if missing:
        raise ArchiveImportError(f"not a trainyard model archive: {', '.join(missing)} missing "
                                 "(expected one folder holding the files of a downloaded model)")
    info = _read_json(root, "info.json") if (root / "info.json").is_file() else {}
    prep, image_size = read_preprocess(_read_json(root, "preprocess.json"))
    classes = read_labels(root / "labels.txt")
    mean = read_mean(root / "mean.npy", prep) if prep.mean_mode != NO_MEAN else None
    network, source = pick_network((root / "network.py").read_text(encoding="utf-8"), info.get("network"))
    if detection and source is not None:
        raise ArchiveImportError("a detector archive imports with a standard detection network only (its "
                                 "network.py is not one); custom detectors are not importable yet")
    shapes = weight_shapes(root / "weights.safetensors")
    if not detection:  # a detector's outputs are anchors x (classes + background), not classes
        check_classes_fit(shapes, len(classes))  # before anything is built: labels.txt alone sizes the network
    expected = (_built_shapes(network, len(classes), prep.channels, image_size)
                if detection or (source is None and not _checks_quickly(check)) else
                _state_shapes(network, source, len(classes), prep.channels, image_size, check_timeout_s,
                              check or NetworkCache().check))
    _check_exactly(expected, shapes)
    weights = read_weights(root / "weights.safetensors")  # torch, imported in the background meanwhile
    if mean is not None:
        prep = prep.replace(mean=_tensor(mean))
    best = info.get("best")
    header = CheckpointHeader(
        network=network, network_source=source, task=task,
        classes=classes, image_size=image_size, epoch=_number(info.get("epoch"), 0),
        metrics=_history(info.get("history")), best=best if isinstance(best, dict) else None,
        imported={k: info.get(k) for k in ("job", "dataset", "versions", "created")})
    return {"format": FORMAT, "model": {name: weights[name] for name in expected}, **header.entries(),
            "preprocess": prep.to_dict(), "optimizer": None, "scheduler": None, "scaler": None, "trainable": None,
            **_thresholds(_read_json(root, "preprocess.json").get("thresholds"), len(classes))}


def _thresholds(found: object, classes: int) -> dict:
    """A multi-label classifier's thresholds (``found`` in preprocess.json: one a label, in 0..1)
    as its checkpoint holds them, else nothing."""
    if found is None:
        return {}
    if (not isinstance(found, list) or len(found) != classes
            or not all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in found)):
        raise ArchiveImportError(f"preprocess.json's thresholds must be {classes} numbers in 0..1, one a label")
    return {"thresholds": [float(t) for t in found]}


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


def _read_json(root: Path, name: str) -> dict:
    try:
        doc = read_json(root / name)
    except (OSError, ValueError) as exc:
        raise ArchiveImportError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ArchiveImportError(f"{name} should hold a JSON object")
    return doc


def read_preprocess(doc: dict) -> tuple[Preprocessing, int]:
    """The checkpoint's preprocessing (without mean) and image size from preprocess.json, checked."""
    try:
        return from_document(doc)
    except ValueError as exc:
        raise ArchiveImportError(f"preprocess.json: {exc}") from None


def read_labels(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ArchiveImportError("labels.txt is not UTF-8 text") from None
    classes = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    if len(classes) < 2:
        raise ArchiveImportError(f"labels.txt names {len(classes)} class(es); a classifier needs two or more")
    return classes


def check_classes_fit(shapes: dict[str, tuple[int, ...]], num_classes: int) -> None:
    """Refuse labels.txt whose class count no weight tensor has: a network built for 200,000
    classes costs hundreds of MiB before the weights could say it does not fit."""
    if not any(len(shape) >= 1 and shape[0] == num_classes for shape in shapes.values()):
        raise ArchiveImportError(f"labels.txt names {num_classes} classes but no layer in "
                                 "weights.safetensors has that many outputs")


def read_mean(path: Path, prep: Preprocessing) -> np.ndarray:
    """mean.npy as float32 (H, W, C); read without pickle, shape checked against preprocess."""
    try:
        mean = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ArchiveImportError(f"mean.npy cannot be read without pickle: {exc}") from None
    expected = prep.stored_shape
    if mean.shape != expected or not np.issubdtype(mean.dtype, np.number):
        raise ArchiveImportError(f"mean.npy has shape {mean.shape} ({mean.dtype}); expected {expected}")
    return np.ascontiguousarray(mean, dtype=np.float32)


def _tensor(array: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(array)


def pick_network(source: str, name: str | None) -> tuple[str | None, str | None]:
    """(standard name, None) when ``source`` is that standard network's file, else (None, source)."""
    if name and name != "custom":
        try:
            if network_source(name) == source:
                return name, None
        except UnknownNetwork:
            pass
    if not source.strip():
        raise ArchiveImportError("network.py is empty")
    return None, source


def weight_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """{name: shape} from weights.safetensors' header alone: no tensor read, no torch."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            return {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    except Exception as exc:  # safetensors raises its own error types for damaged headers
        raise ArchiveImportError(f"weights.safetensors cannot be read: {exc}") from None


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # safetensors raises its own error types for damaged headers
        raise ArchiveImportError(f"weights.safetensors cannot be read: {exc}") from None


def _checks_quickly(check: Check | None) -> bool:
    """Whether ``check`` answers without a torch start: this process keeps a warm checker (a
    server), or a running server's is asked first (a command, cli/remote_check.py). Otherwise a
    standard network, our own code, is built here: torch is loading here anyway."""
    from trainyard.networks import cache
    from trainyard.networks.isolated import CHECKER

    return check is not None and (CHECKER.kept_warm or cache.ask_first is not None)


def _built_shapes(network: str | None, num_classes: int, channels: int,
                  image_size: int) -> dict[str, tuple[int, ...]]:
    """A standard network's state shapes, built here: a detector's (the check runs classifiers
    only), or a classifier's where no checker is warm."""
    from trainyard.artifact.network import create_model

    model = create_model(network, None, num_classes, channels, image_size)
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}


def _state_shapes(network: str | None, source: str | None, num_classes: int, channels: int,
                  image_size: int, timeout: float | None, check: Check) -> dict[str, tuple[int, ...]]:
    """{name: shape} of the network's state dict, in its order, from the network check.

    A custom network.py is user code: it is built and run only in a child process, which
    answers with the shapes (as data); this process never executes it. A standard network's
    answer is the same check's (kept on disk: the second import of one costs no build at all).
    """
    report = check(network=network, source=None if network else source, num_classes=num_classes,
                   in_channels=channels, image_size=image_size, timeout=timeout)
    if not report.get("ok"):
        verdict = "could not be checked" if report.get("timed_out") else "does not build"  # slow is not broken
        raise ArchiveImportError(f"network.py {verdict}: {report.get('error')}")
    return {name: tuple(shape) for name, shape in report["state"].items()}


def _check_exactly(expected: dict[str, tuple[int, ...]], shapes: dict[str, tuple[int, ...]]) -> None:
    """Every tensor fits, or explain which names and shapes do not fit the network."""
    missing = sorted(set(expected) - set(shapes))
    extra = sorted(set(shapes) - set(expected))
    wrong = sorted(k for k in set(expected) & set(shapes) if expected[k] != tuple(shapes[k]))
    if missing or extra or wrong:
        parts = [f"{label}: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
                 for label, names in (("missing", missing), ("unexpected", extra), ("wrong shape", wrong))
                 if names]
        raise ArchiveImportError("weights.safetensors does not fit network.py built for "
                                 "labels.txt's classes: " + "; ".join(parts))


def _history(doc: object) -> dict[str, list[list[float]]]:
    """info.json's metric curves, keeping only well-formed [epoch, value] number pairs."""
    curves = {}
    for name, points in (doc.items() if isinstance(doc, dict) else ()):
        good = [[p[0], p[1]] for p in points if isinstance(p, list) and len(p) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in p)] \
            if isinstance(points, list) else []
        if isinstance(name, str) and good:
            curves[name] = good
    return curves


def _number(value: Any, default: float) -> float:  # Any: info.json's, whatever the file holds
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if not math.isfinite(number) or number < 0:
        return default
    return int(number) if number.is_integer() else number


def describe_archive(checkpoint: dict) -> str:
    """One line for logs: what was imported."""
    header = CheckpointHeader.of(checkpoint)
    network = header.network or "custom network"
    origin = (header.imported or {}).get("job") or {}
    return (f"imported {network} with {len(header.classes)} classes, epoch {header.epoch:g}"
            + (f", from job {origin.get('id')}" if origin.get("id") else ""))

