"""Whether an archive's weights.safetensors fits its network.py, without running archive code here.

The weights' shapes come from the safetensors header alone; the network's from the network
check (a child process for a custom network.py) or, for a detector or where no checker is warm,
from building the standard network here. Only the final read of the weights needs torch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.inference.archive_files import ArchiveImportError
from trainyard.networks import UnknownNetwork, network_source

if TYPE_CHECKING:
    import torch

# NetworkCache.check's signature: keyword arguments network, source, num_classes, in_channels,
# image_size, timeout; the check's answer ({"ok", "state": {name: shape}, ...}).
Check = Callable[..., dict]


def check_classes_fit(shapes: dict[str, tuple[int, ...]], num_classes: int) -> None:
    """Refuse labels.txt whose class count no weight tensor has: a network built for 200,000
    classes costs hundreds of MiB before the weights could say it does not fit."""
    if not any(len(shape) >= 1 and shape[0] == num_classes for shape in shapes.values()):
        raise ArchiveImportError(f"labels.txt names {num_classes} classes but no layer in "
                                 "weights.safetensors has that many outputs")


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


def checks_quickly(check: Check | None) -> bool:
    """Whether ``check`` answers without a torch start: this process keeps a warm checker (a
    server), or a running server's is asked first (a command, cli/remote_check.py). Otherwise a
    standard network, our own code, is built here: torch is loading here anyway."""
    from trainyard.networks import cache
    from trainyard.networks.isolated import CHECKER

    return check is not None and (CHECKER.kept_warm or cache.ask_first is not None)


def built_shapes(network: str | None, num_classes: int, channels: int,
                  image_size: int) -> dict[str, tuple[int, ...]]:
    """A standard network's state shapes, built here: a detector's (the check runs classifiers
    only), or a classifier's where no checker is warm."""
    from trainyard.artifact.network import create_model

    model = create_model(network, None, num_classes, channels, image_size)
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}


def state_shapes(network: str | None, source: str | None, num_classes: int, channels: int,
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


def check_exactly(expected: dict[str, tuple[int, ...]], shapes: dict[str, tuple[int, ...]]) -> None:
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
