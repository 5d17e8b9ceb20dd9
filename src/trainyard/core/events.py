"""A job's events.jsonl: one JSON object a line, appended by the job, tailed by the server.

Every event has ``type`` and ``time`` (Unix seconds). The line number (from 0) is the event's id,
which Server-Sent Events use as Last-Event-ID, so a reconnecting client neither loses nor
duplicates points. Types in use:

- ``log``: ``message``, ``level`` (also written to log.txt for people)
- ``progress``: ``done``, ``total``, ``phase`` and optionally ``eta`` (seconds)
- ``status``: ``status`` (running | done | failed | aborted), ``error`` (message or null); a
  cluster job's launcher also writes ``waiting`` with a ``detail`` ("waiting for 8 GPUs on the
  cluster (5 free)"), which the job manager folds into the job's status
- ``metric``: ``epoch`` (fractional), ``name``, ``value`` (and optionally more fields)
- ``checkpoint``: ``epoch``, ``path``
- ``summary``: the figures so far, for the job's page: a dataset build's per-class ``counts``;
  a model's ``epoch``, ``best`` and ``val_accuracy`` at each validation or snapshot point; a
  cluster job's ``workers`` (rank, node id, host, device), once Ray has placed them
- ``result``: a job-kind specific summary (a dataset's counts, a model's best epoch, ...)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainyard.core import jobfiles

MAX_READ_BYTES = 64 << 20  # what one read_new takes at most; the rest comes with the next call


class EventWriter:
    """Appends events to a job folder's events.jsonl and log lines to log.txt.

    Each event is written with a single ``write`` of a whole line to a file opened in append
    mode, so a reader never sees half an event from a live writer (it may see the line without
    its newline yet, which ``EventTail`` holds back).
    """

    def __init__(self, job_dir: str | os.PathLike):
        self.job_dir = Path(job_dir)
        self.job_dir.mkdir(parents=True, exist_ok=True)
        # Opened beneath the folder, links refused: a server process writes here too (core/jobfiles.py).
        self._events = os.fdopen(jobfiles.open_append(self.job_dir, "events.jsonl"), "a", encoding="utf-8")
        self._log = os.fdopen(jobfiles.open_append(self.job_dir, "log.txt"), "a", encoding="utf-8")

    def emit(self, type: str, **fields: Any) -> dict:
        event = {"type": type, "time": round(time.time(), 3), **fields}
        self._events.write(json.dumps(event, separators=(",", ":")) + "\n")
        self._events.flush()
        return event

    def log(self, message: str, level: str = "info") -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._log.write(f"{stamp} [{level}] {message}\n")
        self._log.flush()
        self.emit("log", message=message, level=level)

    def progress(self, done: float, total: float, phase: str = "", eta: float | None = None) -> None:
        self.emit("progress", done=done, total=total, phase=phase, eta=eta)

    def status(self, status: str, error: str | None = None) -> None:
        self.emit("status", status=status, error=error)

    def close(self) -> None:
        self._events.close()
        self._log.close()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class EventTail:
    """Reads new complete events from an events.jsonl as it grows.

    ``next_id`` is the line number of the next event to be returned; construct with
    ``start_id`` to skip events a client already has.
    """

    path: Path
    start_id: int = 0
    next_id: int = 0
    _offset: int = 0
    _skipped: bool = field(default=False, repr=False)

    def read_new(self) -> list[tuple[int, dict]]:
        """Return ``[(id, event), ...]`` for every complete line not returned before."""
        try:  # the job writes this file: no link, no FIFO is followed (core/jobfiles.py)
            chunk = jobfiles.read_bytes(self.path.parent, self.path.name, MAX_READ_BYTES, offset=self._offset)
        except (FileNotFoundError, jobfiles.UnsafeFile):
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self._offset += end + 1
        out = []
        for line in chunk[: end + 1].splitlines():
            event_id = self.next_id
            self.next_id += 1
            if event_id < self.start_id or not line.strip():
                continue
            try:
                out.append((event_id, json.loads(line)))
            except json.JSONDecodeError:
                continue  # a line torn by a crash mid-write: skip it, keep the numbering
        return out


def read_events(path: str | os.PathLike, types: set[str] | None = None) -> Iterator[dict]:
    """Yield every complete event of a file, optionally only those of the given types."""
    for _, event in EventTail(Path(path)).read_new():
        if types is None or event.get("type") in types:
            yield event
