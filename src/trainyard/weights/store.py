"""The weights store in ``TRAINYARD_HOME/weights``: one folder per entry.

A folder holds the weights file (under its published name, or ``weights.safetensors`` for a
user's own) and ``entry.json``, written last: an entry is present exactly when its entry.json
is. Published entries come from the catalogue; a user's own entries name the network they fit.
Each records its owner and visibility; what the acting user may see and change is its
``access``'s to say (weights/access.py): another user's private entry reads as absent.
"""

from __future__ import annotations

import fcntl
import math
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

from trainyard.core.errors import Conflict, InvalidInput, NotFound
from trainyard.core.files import read_json, write_json_atomic
from trainyard.core.ownership import checked_visibility
from trainyard.weights import catalogue, imports, normalisation, owners
from trainyard.weights.access import Access, Everyone
from trainyard.weights.catalogue import WeightsEntry
from trainyard.weights.download import Progress, download

ENTRY_FILE = "entry.json"


class WeightsStore:
    """Published and own weights under one folder; every method takes entry names."""

    def __init__(self, folder: str | Path, mirror: str = "", access: Access | None = None):
        self.folder = Path(folder)
        self.mirror = mirror  # TRAINYARD_WEIGHTS_URL: where torchvision's files are fetched
        self.access: Access = access or Everyone()

    @classmethod
    def from_settings(cls, settings, access: Access | None = None) -> WeightsStore:
        return cls(settings.weights_dir, settings.weights_url, access)

    # ---- reading -------------------------------------------------------------------------

    def folder_of(self, name: str) -> Path:
        return self.folder / name.replace(":", "+")  # ':' is not portable in file names

    def record(self, name: str) -> dict | None:
        """The stored entry.json of ``name`` (its canonical name, not an alias), or None (also
        where the acting user may not see it)."""
        stored = self.stored(name)
        return stored if stored is not None and self.access.sees(stored) else None

    def stored(self, name: str) -> dict | None:
        """The stored entry.json of ``name`` whoever may see it (the store's own checks)."""
        path = self.folder_of(name) / ENTRY_FILE
        return read_json(path) if path.is_file() else None

    def own_entries(self) -> list[dict]:
        """Stored entries that are not in the catalogue (the user's own weights) that the acting user sees."""
        found = [read_json(p) for p in sorted(self.folder.glob(f"*/{ENTRY_FILE}"))]
        return [r for r in found if r.get("source") == "user" and self.access.sees(r)]

    def describe(self, entry: WeightsEntry | dict, stored_folders: set[str] | None = None) -> dict:
        """An entry as the API and CLI show it: catalogue fields plus ``present`` and ``path``.
        ``stored_folders`` (the store's folder names, listed once) spares a listing of 1,800
        entries a file check each."""
        # A shallow copy: dataclasses.asdict deep-copies every tuple, a second for the catalogue
        data = {f.name: getattr(entry, f.name) for f in fields(entry)} if isinstance(entry, WeightsEntry) \
            else dict(entry)
        data.pop("users", None)  # who else pulled it is not for every reader
        known_absent = stored_folders is not None and data["name"].replace(":", "+") not in stored_folders
        stored = None if known_absent else self.record(data["name"])
        # A library's missing figure is NaN: not a percentage to show, nor valid JSON.
        data["accuracy"] = {k: v for k, v in (data.get("accuracy") or {}).items()
                            if isinstance(v, (int, float)) and math.isfinite(v)}
        data["present"] = stored is not None
        data["path"] = str(self.folder_of(data["name"]) / data["filename"]) if stored else None
        if stored:
            data["sha256"] = stored.get("sha256") or data.get("sha256")
            data["size_mb"] = stored.get("size_mb") or data.get("size_mb")
            data["verified"] = stored.get("verified", True)  # False: its source gave no hash to check
            if stored.get("origin"):  # the download's address or the imported file's name
                data["origin"] = stored["origin"]
            data["owner"] = self.access.owner_of(stored)
            data["visibility"] = stored.get("visibility") or "private"
            data["changeable"] = self.access.changes(stored)  # the page offers its owner the control
        return data

    def list(self, search: str = "", source: str | None = None, present: bool = False) -> list[dict]:
        """The user's own entries first, then torchvision's and timm's, whose name or network
        contains every word of ``search`` (case-insensitive). ``source`` "mine" (or "user") is the
        user's own; an own entry among 1,800 published ones is found without searching for it."""
        words = search.lower().split()

        def wanted(name: str, network: str) -> bool:
            return all(word in f"{name} {network}".lower() for word in words)

        mine = source in (None, "mine", "user")
        own = sorted(self.own_entries(), key=lambda e: e["name"].lower()) if mine else []
        published: list[WeightsEntry] = [] if source in ("mine", "user") else catalogue.catalogue(source)
        folders = {p.parent.name for p in self.folder.glob(f"*/{ENTRY_FILE}")}
        rows = [self.describe(e, folders) for e in own if wanted(e["name"], e["network"])]
        rows += [self.describe(e, folders) for e in published if wanted(e.name, e.network)]
        return [r for r in rows if r["present"]] if present else rows

    def resolve(self, name: str) -> dict:
        """The entry called ``name`` (an alias such as ``resnet18.imagenet`` works), described."""
        entry = catalogue.find_entry(name)
        if entry is not None:
            return self.describe(entry)
        stored = self.record(name)
        if stored is None:
            raise NotFound(f"no weights entry {name!r}; see `trainyard weights list`")
        return self.describe(stored)

    def weights_path(self, name: str) -> tuple[Path, dict]:
        """The file and record of a present entry; NotFound says how to get it."""
        described = self.resolve(name)
        if not described["present"]:
            raise NotFound(f"the weights {described['name']} are not in the store: run "
                           f"`trainyard weights pull {described['name']}` on a machine with "
                           "internet, or import the file (`trainyard weights import NAME FILE`)")
        return Path(described["path"]), described

    # ---- changing ------------------------------------------------------------------------

    def pull(self, name: str, on_progress: Progress | None = None, owner: str | None = None,
             visibility: str | None = None) -> dict:
        """Download a published entry (resuming a partial file), check it, and store it as
        ``owner``'s (default: the acting user's; a background pull names them)."""
        self.access.check_create()
        entry = self._published(name)
        url = catalogue.download_url(entry, self.mirror)
        if url is None:
            raise InvalidInput(f"{entry.name} has no download address; import the file instead")
        owner = owner or self.access.who()
        if self.stored(entry.name) is not None:  # already here and checked when it came
            owners.hold(self, entry.name, owner)
            return self.describe(entry)
        folder = self.folder_of(entry.name)
        with self.lock(entry.name):
            path = folder / entry.filename
            fetched = download(url, path, sha256=entry.sha256, max_bytes=catalogue.max_bytes(entry),
                               on_progress=on_progress)
            self._check_or_remove(path, entry)  # verified: False where no published hash was checked
            stamp = owners.stamp(self, entry.name, visibility, owner)
            record = {**entry.to_dict(), "verified": fetched.verified, **stamp}
            return self.finish(record, path, fetched.sha256, origin=url)

    def import_file(self, name: str, file: str | Path, network: str | None = None,
                    mean: str | Sequence[float] | None = None, std: str | Sequence[float] | None = None,
                    visibility: str | None = None) -> dict:
        """Store a file copied by hand: a published entry's (hash-checked), or the user's own
        weights for ``network`` under a new name, with the input normalisation they were trained
        with (``mean``/``std`` per channel on 0..1; a trainyard checkpoint brings its own).
        The acting user's, ``visibility`` private unless said. weights/imports.py stores it."""
        self.access.check_create()
        if visibility is not None:  # None: private, or a replaced entry's own
            checked_visibility(visibility)
        file = Path(file)
        norm = normalisation.given(mean, std)  # a typo is refused before the file is read
        if not file.is_file():
            raise NotFound(f"{file} is not a file")
        entry = catalogue.find_entry(name)
        if entry is not None:
            if norm is not None:
                raise InvalidInput(f"{entry.name} is a published entry: its normalisation is the "
                                   f"library's (mean {list(entry.mean)}, std {list(entry.std)})")
            return imports.import_published(self, entry, file, network, visibility)
        return imports.import_own(self, name, file, network, norm, visibility)

    def remove(self, name: str) -> dict:
        """Delete a stored entry's files; the catalogue keeps listing a published one. One of a
        published entry's later ``users`` only lets go of it; its owner hands it to the next."""
        described = self.resolve(name)
        gone = {**described, "present": False, "path": None, "owner": None, "visibility": None,
                "changeable": None}
        if owners.let_go(self, described["name"]):
            return gone
        with self.lock(described["name"]):
            shutil.rmtree(self.folder_of(described["name"]))
        return gone

    def set_visibility(self, name: str, visibility: str) -> dict:
        """Make a stored entry private or the team's (its owner or an admin)."""
        checked_visibility(visibility)
        described = self.resolve(name)
        stored = owners.changeable(self, described["name"])
        self.write_record(described["name"], {**stored, "visibility": visibility})
        return self.resolve(described["name"])

    # ---- helpers -------------------------------------------------------------------------

    def _published(self, name: str) -> WeightsEntry:
        entry = catalogue.find_entry(name)
        if entry is None:
            own = self.record(name)
            if own is not None:
                raise InvalidInput(f"{name} is your own entry: it has nothing to pull")
            raise NotFound(f"no published weights called {name!r}; see `trainyard weights list`")
        return entry

    def check_file(self, path: Path, record: dict) -> None:
        """Refuse (InvalidInput) a file whose tensors do not fit ``record``'s network."""
        # these import torch: only what reads weights pays for it
        from trainyard.weights import fit, tensor_files

        state = tensor_files.open_tensors(path).as_meta()  # shapes only: nothing read
        fit.check_fits(state, record["network"], int(record["input_size"][-1]), path.name)

    def _check_or_remove(self, path: Path, entry: WeightsEntry) -> None:
        try:
            self.check_file(path, entry.to_dict())
        except InvalidInput:
            path.unlink(missing_ok=True)  # never leave a file that is not these weights
            raise

    def finish(self, record: dict, path: Path, sha: str, origin: str) -> dict:
        size_mb = round(path.stat().st_size / 2**20, 3)
        write_json_atomic(path.parent / ENTRY_FILE, {**record, "sha256": sha, "size_mb": size_mb,
                                                     "origin": origin})
        return self.describe(record)

    def write_record(self, name: str, record: dict) -> None:
        write_json_atomic(self.folder_of(name) / ENTRY_FILE, record)

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """One change at a time per entry (a pull in the server and one from the CLI, say)."""
        folder = self.folder_of(name)
        folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f".{folder.name}.lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Conflict(f"{name} is being downloaded or changed right now; try again when "
                               "that has finished") from None
            yield
