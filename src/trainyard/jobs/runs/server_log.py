"""The server's own lines about a job, in ``server.log`` of the server's part of its folder
(core/paths.py's JobFolder), never among the files the job writes: why it was stopped early,
that it was queued again. The job's log page shows them after the job's own log."""

from __future__ import annotations

import os
import time

from trainyard.core import jobfiles
from trainyard.core.paths import JobFolder


def note(folder: JobFolder, message: str, level: str = "info") -> None:
    """Append one stamped line (beneath the folder, no link followed, as every job file)."""
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{level}] {message}\n"
    fd = jobfiles.open_append(folder.path, folder.server_log.name)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def tail(folder: JobFolder, max_bytes: int) -> str:
    """The end of the server's lines ("" when it wrote none)."""
    return jobfiles.tail_text(folder.path, folder.server_log.name, max_bytes)
