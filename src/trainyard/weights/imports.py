"""Importing a weights file copied by hand into the weights store: a published entry's file
(hash-checked, fitted to its network) or the user's own weights for a network under a new name,
with the input normalisation they were trained with; only the network's tensors are kept.
WeightsStore.import_file (weights/store.py) checks what it was given and calls one of the two."""

from __future__ import annotations

import re
import shutil
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from trainyard.artifact.recorded import RecordedInput
from trainyard.core.errors import Conflict, InvalidInput
from trainyard.weights import normalisation, owners
from trainyard.weights.catalogue import WeightsEntry
from trainyard.weights.download import check_hash

OWN_FILENAME = "weights.safetensors"
DROPPED_SHOWN = 10  # names of dropped tensors an import lists
_OWN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


class ImportingStore(owners.WeightsStore, Protocol):
    """What of the store (weights/store.py) an import reads and writes, besides owners.py's."""

    def describe(self, entry: WeightsEntry | dict, stored_folders: set[str] | None = None) -> dict: ...

    def folder_of(self, name: str) -> Path: ...

    def check_file(self, path: Path, record: dict) -> None: ...

    def finish(self, record: dict, path: Path, sha: str, origin: str) -> dict: ...

    def lock(self, name: str) -> AbstractContextManager[None]: ...


def import_published(store: ImportingStore, entry: WeightsEntry, file: Path, network: str | None,
                     visibility: str | None) -> dict:
    """Store a published entry's file, checked against its hash and network, as ``visibility``."""
    if network and network != entry.network:
        raise InvalidInput(f"{entry.name} holds weights for {entry.network}, not {network}")
    sha = check_hash(file, entry.sha256, file.name)
    store.check_file(file, entry.to_dict())
    stored = store.stored(entry.name)
    if stored is not None and not store.access.changes(stored):  # the same file: one more user of it
        owners.hold(store, entry.name, store.access.who())
        return store.describe(entry)
    folder = store.folder_of(entry.name)
    with store.lock(entry.name):
        path = folder / entry.filename
        _copy_atomic(file, path)
        return store.finish({**entry.to_dict(), **owners.stamp(store, entry.name, visibility)}, path, sha,
                            origin=f"import of {file.name}")


def import_own(store: ImportingStore, name: str, file: Path, network: str | None,
               norm: normalisation.Normalisation | None, visibility: str | None) -> dict:
    """Store the user's own weights for ``network`` as ``name``, keeping the network's tensors only."""
    if not _OWN_NAME.match(name):
        raise InvalidInput(f"{name!r} is not a published entry; a name for your own weights "
                           "uses letters, digits, '.', '_' and '-' (no ':')")
    stored = store.stored(name)
    if stored is not None and not store.access.changes(stored):  # names are one namespace for all
        raise Conflict(f"the name {name} is taken in the weights store; choose another")
    if not network:
        raise InvalidInput(f"{name} is not a published entry: say which network the weights "
                           "are for (--network NET)")
    info = _network_info(network)
    record = {"name": name, "network": info.name, "source": "user", "filename": OWN_FILENAME,
              "url": None, "accuracy": {}, "num_classes": 0, "aliases": [],
              "input_size": [3, info.image_size, info.image_size], **owners.stamp(store, name, visibility)}
    recorded = RecordedInput.of_file(file)  # a plain weights file records nothing: only the user can say
    if recorded.input_size:  # a trainyard checkpoint's own input size, not the network's default
        record["input_size"] = list(recorded.input_size)
    side = record["input_size"][-1]
    norm = norm or recorded.normalisation
    record["mean"], record["std"] = norm if norm else (None, None)
    # these import torch: only what reads weights pays for it
    from trainyard.weights import fit, tensor_files

    # A tensor at a time: the file is never held in memory (nor copied there).
    tensors = tensor_files.open_tensors(file)
    record["num_classes"] = fit.check_fits(tensors.as_meta(), info.name, side, file.name)
    keep, dropped = fit.network_tensors(tensors.shapes, info.name, side)
    if dropped:  # anything but the network's tensors stays out of the store
        record["dropped"] = {"count": len(dropped), "names": sorted(dropped)[:DROPPED_SHOWN]}
    folder = store.folder_of(name)
    with store.lock(name):
        path = folder / OWN_FILENAME
        tensor_files.write_safetensors(keep, tensors, path)
        return store.finish(record, path, check_hash(path, None, path.name), origin=f"import of {file.name}")


def _network_info(network: str):
    from trainyard.networks import get_network

    try:
        return get_network(network)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def _copy_atomic(source: Path, dest: Path) -> None:
    part = dest.with_name(dest.name + ".part")
    shutil.copyfile(source, part)
    part.replace(dest)
