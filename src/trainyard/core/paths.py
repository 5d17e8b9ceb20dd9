"""Keep user-given paths inside the configured data roots, and lay out job folders."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from trainyard.core.errors import Forbidden, InvalidInput, NotFound


class PathNotAllowed(Forbidden):
    """A path that lies outside every data root (HTTP 403), or is missing (PathMissing, 404)."""


class PathMissing(NotFound, PathNotAllowed):
    """A path inside the data roots that does not exist."""


def resolve_inside(path: str | os.PathLike, roots: Iterable[Path], *, must_exist: bool = True) -> Path:
    """Resolve ``path`` (following links) and check it lies inside one of ``roots``.

    Raises PathNotAllowed with a message a user can act on, InvalidInput for a path no file
    system accepts (a NUL byte, which the OS refuses with a ValueError, not an OSError).
    """
    return inside_roots(path, resolve_roots(roots), must_exist=must_exist)


def resolve_roots(roots: Iterable[str | os.PathLike]) -> list[Path]:
    """``roots`` resolved (links followed), as `inside_roots` takes them."""
    return [Path(r).expanduser().resolve() for r in roots]


def inside_roots(path: str | os.PathLike, roots: list[Path], *, must_exist: bool = True) -> Path:
    """`resolve_inside` with ``roots`` already resolved (`resolve_roots`): what a loop checking
    thousands of paths against the same roots calls, resolving them once."""
    if "\x00" in os.fspath(path):
        raise InvalidInput(f"{os.fspath(path)!r} contains a NUL byte; no file has such a name")
    raw = os.path.expanduser(os.fspath(path))
    # os.path on strings, not pathlib: a quarter of a classify-many job's time went to this check
    resolved = os.path.realpath(raw)
    if not any(resolved == str(r) or resolved.startswith(os.path.join(r, "")) for r in roots):
        allowed = ", ".join(str(r) for r in roots) or "(none configured)"
        raise PathNotAllowed(
            f"{raw} is outside the data roots ({allowed}); set TRAINYARD_DATA_ROOTS to allow it"
        )
    if must_exist and not os.path.exists(resolved):
        raise PathMissing(f"{raw} does not exist")
    return Path(resolved)


def is_inside(path: Path, folder: Path) -> bool:
    """True if ``path`` resolves to ``folder`` or somewhere below it."""
    resolved = Path(path).resolve()
    folder = Path(folder).resolve()
    return resolved == folder or resolved.is_relative_to(folder)


class JobFolder:
    """The files of one job: spec.json, events.jsonl, log.txt, checkpoints/ and outputs."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @property
    def spec(self) -> Path:
        return self.path / "spec.json"

    @property
    def events(self) -> Path:
        return self.path / "events.jsonl"

    @property
    def log(self) -> Path:
        return self.path / "log.txt"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def dataset(self) -> Path:
        """Where a dataset job's finished data lives."""
        return self.path / "dataset"


def checkpoint_name(epoch: float) -> str:
    """File name of the checkpoint of a (possibly fractional) epoch: ``epoch-0003.pt``,
    ``epoch-0002.5.pt``. Readers should parse the epoch, not sort names."""
    whole = int(epoch)
    fraction = f"{epoch - whole:.4f}".rstrip("0").rstrip(".").removeprefix("0")
    return f"epoch-{whole:04d}{fraction}.pt"


CHECKPOINT_GLOB = "epoch-*.pt"
_CHECKPOINT_NAME = re.compile(r"^epoch-(\d+(?:\.\d+)?)\.pt$")


def checkpoint_epoch(path: str | os.PathLike) -> float | int | None:
    """The epoch a `checkpoint_name` file holds (an int when whole), or None for another name."""
    match = _CHECKPOINT_NAME.match(Path(path).name)
    if not match:
        return None
    epoch = float(match.group(1))
    return int(epoch) if epoch == int(epoch) else epoch
