"""When a rank of a distributed job fails, the job's error names the failure, not its echo.

A rank that fails with an error of its own leaves it in ``rank-N.error`` in the job folder
(`record_rank_error`). The other ranks then fail in their next collective, with gloo's or NCCL's
"connection reset" (`is_peer_failure`); rank 0 reports the failed rank's own message in place
of that (`peer_failure_message`), or says a peer went away when none was left.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import torch.distributed as dist


def rank_error_path(job_dir: str | os.PathLike, rank: int) -> Path:
    return Path(job_dir) / f"rank-{rank}.error"


def record_rank_error(job_dir: str | os.PathLike, rank: int, message: str) -> None:
    """A rank other than 0 leaves its error where rank 0 (on the same folder) can report it."""
    try:
        rank_error_path(job_dir, rank).write_text(message + "\n", encoding="utf-8")
    except OSError:
        pass  # another node's folder, or read-only: the traceback is in output.txt anyway


def is_peer_failure(error: BaseException) -> bool:
    """Did a collective fail because another rank went away (killed, crashed, timed out)?"""
    if isinstance(error, getattr(dist, "DistError", ())):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(
        needle in text for needle in ("gloo", "nccl", "connection closed", "connection reset",
                                      "broken pipe", "timed out", "socket"))


def peer_failure_message(job_dir: str | os.PathLike, error: BaseException, rank: int = 0,
                         wait_s: float = 1.0) -> str:
    """The job's error after a peer failure: a failed rank's own message if it left one."""
    deadline = time.monotonic() + wait_s
    while True:  # a rank writes its message before it exits, so it is there or soon will be
        found = sorted(Path(job_dir).glob("rank-*.error"))
        if found or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for path in found:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        if text:
            return f"training process {path.stem.replace('-', ' ')} failed: {text}"
    return ("another training process of this job stopped (killed, out of memory, or its machine "
            f"went away; see output.txt). Rank {rank} saw: {first_sentence(error)}")


def first_sentence(error: BaseException) -> str:
    """'Read error [127.0.0.1]:31140: Connection reset by peer' out of gloo's long message."""
    text = re.sub(r"^\[[^\]]*\.(?:cc|cpp|h):\d+\]\s*", "", str(error).strip())  # source location
    text = text.split(". ")[0].splitlines()[0] if text else type(error).__name__
    return text[:200]
