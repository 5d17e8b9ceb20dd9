"""Seconds, bytes, timestamps and a process's end as words a person reads (pages, CLI output, job errors)."""

from __future__ import annotations

import signal
import time

from trainyard.core.status import FINAL_STATUSES, Status, vocabulary
from trainyard.core.tasks import best_of, task_traits


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def age(timestamp: float | None) -> str:
    """'5m ago' style."""
    if not timestamp:
        return ""
    return duration(max(0, time.time() - timestamp)) + " ago"


def gib(n_bytes: int | None) -> str:
    return "" if n_bytes is None else f"{n_bytes / 2**30:.1f} GiB"


def byte_size(count: int) -> str:
    """A size in words: "1.5 GiB", "12.0 MiB", "3.2 KiB", "512 bytes"."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def clock(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else ""


def best_score_text(best: dict | None) -> str:
    """A run's best validation score as its page shows it, in its task's words (core/tasks.py):
    a classifier's top-1 as "87.50%", a detector's as "mAP@0.5 0.824"; "–" when it has none yet."""
    found = best_of(best)
    return found[0].score_text.format(found[1]) if found else "–"


def install(env) -> None:
    """Make these available as Jinja2 filters, and the job statuses as globals: templates compare
    with ``Status.DONE`` and ``final_statuses``, and base.html hands ``status_vocabulary`` to the
    pages' scripts (static/status.js), so no status name is spelled outside core/status.py."""
    env.filters.update(duration=duration, age=age, gib=gib, clock=clock, best_score=best_score_text)
    env.globals.update(task_traits=task_traits)  # pages ask the task registry, never compare task names
    env.globals.update(Status=Status, final_statuses=FINAL_STATUSES, status_vocabulary=vocabulary())


def process_end(code: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it), in the one
    wording every job error uses: "exit code 1", "killed by SIGKILL"."""
    if code is None:
        return "exit code unknown"
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"
