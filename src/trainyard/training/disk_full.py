"""A full disk said in words: "no space left on device", not torch's "unexpected pos 704 vs 598".

A checkpoint written to a full file system fails in one of two ways: Python's own write or fsync
raises OSError ENOSPC (or EDQUOT, a quota), or torch's C++ archive writer notices the short write
first and raises a RuntimeError about positions, with the OSError at most in its context. Both
end the job; the user must hear what to do about it.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from trainyard.core.errors import error_chain

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
TORCH_WRITE_FAILURES = ("unexpected pos", "file write failed", "PytorchStreamWriter failed")
NEARLY_FULL_BYTES = 64 << 20  # what a failed torch write with this little room left means


def disk_full_message(error: BaseException, folder: Path) -> str | None:
    """The user's one line when ``error`` (or what caused it) is a full disk, else None."""
    if any(isinstance(e, OSError) and e.errno in FULL_ERRNOS for e in error_chain(error)):
        return _message(folder)
    torch_write = any(isinstance(e, RuntimeError) and any(s in str(e) for s in TORCH_WRITE_FAILURES)
                      for e in error_chain(error))
    if torch_write and _free_bytes(folder) < NEARLY_FULL_BYTES:
        return _message(folder)
    return None


def _message(folder: Path) -> str:
    return (f"no space left on device: a file of the job could not be written in {folder}; free some "
            "space, then resume the job (the checkpoints written so far are kept)")


def _free_bytes(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0
