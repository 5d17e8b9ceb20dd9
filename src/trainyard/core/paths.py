"""Keep user-given paths inside the configured data roots, and lay out job folders."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainyard.core.errors import Forbidden, InvalidInput, NotFound

WORK_DIR = "work"  # a job's work folder, the only one it writes (JobFolder)
FENCE_DIR = "fence"  # a cluster job's fence (core/fence.py): the server's and its launcher's
CHECKPOINTS_DIR = "checkpoints"


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
    """Where one job's files live, split by who writes them (docs/architecture.md, "One job, one folder").

    ``jobs/<id>/`` is the server's part: ``spec.json`` (the validated input), ``output.txt`` (the
    job's stdout and stderr, a file the server creates and hands over as a descriptor),
    ``server.log`` (the server's own lines about the job), the archives it exports and a cluster
    job's ``fence/`` (core/fence.py). The job cannot write there: the sandbox binds only
    ``jobs/<id>/work/``, the work folder, read-write (and ``spec.json`` and ``fence/``
    read-only). The work folder holds what the job writes: events.jsonl, log.txt, checkpoints/
    and its outputs (a dataset's ``dataset/``, an inference job's results); the server reads it
    through core/jobfiles.py only.

    A job made before the split (no ``work`` folder) keeps everything in ``jobs/<id>/``: its work
    folder is the job folder itself. A ``work`` that is a link is not one (lstat), so such a job
    cannot move its work folder elsewhere by planting one.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def of(cls, folder: str | os.PathLike) -> JobFolder:
        """The job whose folder, or work folder (a folder named ``work``), ``folder`` is."""
        path = Path(folder)
        return cls(path.parent if path.name == WORK_DIR else path)

    def create(self) -> JobFolder:
        """Make a new job's folder in the split layout (FileExistsError if it exists)."""
        self.path.mkdir(parents=True)
        (self.path / WORK_DIR).mkdir()
        return self

    @property
    def split(self) -> bool:
        """Whether the job has a work folder of its own (made since the split), not a link."""
        try:
            return stat.S_ISDIR(os.lstat(self.path / WORK_DIR).st_mode)
        except OSError:
            return False

    @property
    def work(self) -> Path:
        """The folder the job writes (the job folder itself for a job made before the split)."""
        return self.path / WORK_DIR if self.split else self.path

    # -- the server's part --
    @property
    def spec(self) -> Path:
        return self.path / "spec.json"

    def read_spec(self) -> Any:
        """The spec's JSON, read as every job file (core/jobfiles.py: before the split the job
        could write it); FileNotFoundError, `UnsafeFile` or ValueError as that reader raises."""
        from trainyard.core import jobfiles  # when read: the CLI's help imports paths, not libc

        return jobfiles.read_json(self.path, self.spec.name)

    @property
    def output(self) -> Path:
        """The job processes' stdout and stderr (created by the server, written through a descriptor)."""
        return self.path / "output.txt"

    @property
    def server_log(self) -> Path:
        """The server's own lines about the job (why it stopped it early, a supervisor's report)."""
        return self.path / "server.log"

    @property
    def exports(self) -> Path:
        """The archives the server built of the job's checkpoints."""
        return self.path / "exports"

    @property
    def fence(self) -> Path:
        """The folder of a cluster job's fence: its ranks get it read-only, a folder (not the
        file) so that they see each atomic replacement of the file."""
        return self.path / FENCE_DIR

    # -- the job's work folder --
    @property
    def events(self) -> Path:
        return self.work / "events.jsonl"

    @property
    def log(self) -> Path:
        return self.work / "log.txt"

    @property
    def checkpoints(self) -> Path:
        return self.work / CHECKPOINTS_DIR

    @property
    def dataset(self) -> Path:
        """Where a dataset job's finished data lives."""
        return self.work / "dataset"


def job_id_of(folder: str | os.PathLike) -> str:
    """The id of the job whose folder, or work folder, ``folder`` is."""
    return JobFolder.of(folder).path.name


def checkpoint_owner(checkpoint: str | os.PathLike) -> Path | None:
    """The job folder (``.../jobs/<id>``) whose checkpoint ``checkpoint`` is by its name (in
    the work folder's ``checkpoints``, or the job folder's before the split; links not
    followed); None for a file that is not in one."""
    folder = Path(os.path.abspath(checkpoint)).parent
    if folder.name != CHECKPOINTS_DIR:
        return None
    owner = folder.parent
    job = owner.parent if owner.name == WORK_DIR else owner
    return job if job.parent.name == "jobs" else None


def checkpoint_job(checkpoint: str | os.PathLike, jobs_dir: Path) -> str | None:
    """The id of the job in ``jobs_dir`` whose checkpoint ``checkpoint`` is, else None."""
    job = checkpoint_owner(checkpoint)
    return job.name if job is not None and job.parent == jobs_dir else None


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
