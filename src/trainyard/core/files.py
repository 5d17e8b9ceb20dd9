"""Crash-safe file writes: write a temporary file, fsync it, rename it into place."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


# ``write`` may return anything (file.write returns a count): the result is ignored.
def write_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], object],
                 before_rename: Callable[[], None] | None = None) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then rename it over ``path``.

    A reader sees the old file or the new one, never half of one, even if the process is killed.
    The file gets the mode a plain ``open`` would give it (0666 less the umask), not mkstemp's
    0600: a sandboxed process running as another uid reads the datasets and weights it is given.
    ``before_rename`` runs once the temp file is on disk, just before the rename: a last check
    there (a cluster rank's fence) leaves only the rename itself between it and the new file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """This process's umask, read without setting it (os.umask would, racing other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    data = json.dumps(obj, indent=2, sort_keys=True).encode()
    write_atomic(path, lambda f: f.write(data))


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
