"""The published weights catalogue kept in a file, so listing it needs neither torch nor timm.

Building the catalogue imports torchvision and timm and reads 1,800 pretrained configs: 9 s on
a loaded machine, which the Weights page and `trainyard weights list` waited for on every first
call of a process (issue 22). The entries are written once to the user's cache folder, keyed by
the versions of torchvision and timm and by the source of catalogue.py (a change in how entries
are made is a new key), and read back in a few hundredths of a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from trainyard.core import environment


class _Entry(Protocol):
    """What this module needs of an entry (catalogue.WeightsEntry): catalogue.py calls this
    module, so the entry class is handed in, never imported, and the two form no import circle."""

    def to_dict(self) -> dict: ...


Entry = TypeVar("Entry", bound=_Entry)

TUPLES = ("input_size", "mean", "std", "aliases")  # JSON arrays that are tuples in an entry


def cache_file(source: str) -> Path:
    """Where the entries of ``source`` ("torchvision" or "timm") are kept."""
    versions = []
    for package in ("torch", "torchvision", "timm"):
        try:
            versions.append(f"{package}-{importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package}-none")
    code = (Path(__file__).parent / "catalogue.py").read_bytes()
    key = hashlib.sha256("/".join(versions).encode() + code).hexdigest()[:16]
    base = environment.cache_home()
    return base / "trainyard" / f"weights-{source}-{key}.json"


def cached_entries(source: str, build: Callable[[], tuple[Entry, ...]],
                   make: Callable[..., Entry]) -> tuple[Entry, ...]:
    """The entries ``build`` makes, from the cache file when it has them (and written there when
    not); ``make`` is WeightsEntry."""
    path = cache_file(source)
    try:
        return tuple(_entry(make, row) for row in json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):  # not written yet, or unreadable: build them
        pass
    entries = build()
    _write(path, [_row(e) for e in entries])
    return entries


def _row(entry: _Entry) -> dict:
    row = entry.to_dict()
    # NaN is not JSON; a library's missing figure is no figure
    row["accuracy"] = {k: v for k, v in row["accuracy"].items() if not (isinstance(v, float) and math.isnan(v))}
    return row


def _entry(make: Callable[..., Entry], row: dict) -> Entry:
    return make(**{k: tuple(v) if k in TUPLES and isinstance(v, list) else v for k, v in row.items()})


def _write(path: Path, rows: list[dict]) -> None:
    """Whole or not at all; a folder that cannot be written only means building them next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
            json.dump(rows, out)
        os.replace(out.name, path)
    except OSError:
        pass
