"""The server's credential when no TRAINYARD_AUTH_TOKEN is set: a fresh random token per server.

Every door of the API needs a credential, on localhost too (web/auth.py): without one, code in a
sandbox that reaches loopback, or another account on the machine, could list, read and delete
jobs. The newcomer's flow stays one step, as Jupyter's does: ``serve`` prints a URL carrying the
token, which the browser turns into a session cookie, and writes the token to
``TRAINYARD_HOME/server-token`` (mode 0600, owned by the user) for the CLI (cli/remote.py). The
sandbox hides TRAINYARD_HOME from user code, so a job cannot read the file. Torch-free.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

FILE_NAME = "server-token"
LOGIN_FILE_NAME = "cli-token"  # the personal token ``trainyard login`` keeps for the CLI (cli/login.py)
MAX_BYTES = 4096


def fresh() -> str:
    """A new random token (192 bits)."""
    return secrets.token_urlsafe(24)


def token_file(home: str | os.PathLike, name: str = FILE_NAME) -> Path:
    return Path(home) / name


def write(home: str | os.PathLike, token: str, name: str = FILE_NAME) -> Path:
    """Write ``token`` to the home's token file, readable by this user only (0600 from the moment
    it exists: created under another name with that mode, then renamed over any older one)."""
    path = token_file(home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{name}.{os.getpid()}")
    temporary.unlink(missing_ok=True)  # a leftover of a server that died with this pid
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return path


def read(home: str | os.PathLike, name: str = FILE_NAME) -> str | None:
    """The token in the home's token file; None when there is none, or when the file is not this
    user's own private regular file (a link, a FIFO, readable by others: never trusted)."""
    try:
        fd = os.open(token_file(home, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        return os.read(fd, MAX_BYTES).decode(errors="replace").strip() or None
    finally:
        os.close(fd)


def remove(home: str | os.PathLike, token: str) -> None:
    """Remove the token file when it still holds ``token`` (a later server's file stays)."""
    if read(home) == token:
        try:
            token_file(home).unlink()
        except OSError:
            pass
