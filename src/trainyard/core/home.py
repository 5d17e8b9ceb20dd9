"""A home only its owner reads: TRAINYARD_HOME and its top folders 0700, the database 0600, and
the umask of every trainyard process 077.

The store holds every job's spec (a custom network's source), the datasets and the database:
with the default umask (022) the home was 0755 and the database 0644, and any local account read
them. `restrict_process` is called first thing by the CLI and the server (the jobs they start
inherit it) and by the sandbox's entry; `make_private` makes the home's folders 0700 and tightens
an existing home made before this.

As root, user code runs as other uids (the sandbox's, a cluster job's own: sandbox/namespaces.py,
sandbox/rank_network.py) that must read what the server writes for them (a spec, the weights, an
upload) through the folders bubblewrap binds in: there the umask stays 022, and it is the 0700
folders at the home's top, which bwrap (root) crosses and no other account can, that close the
store. The database is 0600 either way (no sandbox reads it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

PRIVATE_UMASK = 0o077
ROOT_UMASK = 0o022  # root's sandboxed uids read the files it writes for them (above)
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def process_umask() -> int:
    """The umask a trainyard process runs with (the module's docstring says why root differs)."""
    return ROOT_UMASK if os.geteuid() == 0 else PRIVATE_UMASK


def restrict_process() -> None:
    """Set this process's umask, before it creates any file (its children inherit it)."""
    os.umask(process_umask())


def make_private(folders: Iterable[Path], files: Iterable[Path] = ()) -> None:
    """Make ``folders`` (created if missing) 0700 and the existing ``files`` 0600: a home made
    before this is tightened at start. What another account owns is left as it is (chmod would
    fail; its owner decides)."""
    for folder in folders:
        folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        _tighten(folder, FOLDER_MODE)
    for file in files:
        _tighten(file, FILE_MODE)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty, 0600, when it does not exist (SQLite then makes its journal and
    shared-memory files with the database's mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except FileExistsError:
        pass


def _tighten(path: Path, mode: int) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if info.st_uid == os.geteuid() and (info.st_mode & 0o777) != mode and not os.path.islink(path):
        os.chmod(path, mode)
