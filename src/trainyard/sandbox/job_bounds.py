"""What a training job running user code may hold of the machine, below the machine's own limits:
its tasks (processes and threads) and the bytes of its work folder. sandbox/supervisor.py checks
both as it watches the job, a cgroup's ``pids.max`` counts the tasks too where there is one, and
RLIMIT_FSIZE keeps one file below the folder's bound between two scans.

Before this, the caps sat above the machine's: 256 processes of 256 tasks each is 65,536 tasks,
twice this machine's ``pid_max``, and threads were not counted at all without a cgroup (a job
could take every pid of the machine); and a job wrote 2 GiB into its work folder in 30 s, as
much as the disk held. Now a job may have at most a quarter of the machine's tasks, and its work
folder may grow to ``TRAINYARD_JOB_WORK_MB``, by default three quarters of the disk's free space
when the job starts (checkpoints of a large network are gigabytes: the bound is the disk's, not
a guess at the network's).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

TASKS_PER_PROCESS = 256  # torch's pools: dozens of threads a process
WORK_SETTING = "TRAINYARD_JOB_WORK_MB"
FREE_SHARE = 0.75  # of the disk's free space, the default bound of a work folder


def machine_tasks() -> int:
    """The tasks this machine can hold at all: the lower of pid_max and threads-max."""
    found = []
    for name in ("pid_max", "threads-max"):
        try:
            found.append(int(Path(f"/proc/sys/kernel/{name}").read_text()))
        except (OSError, ValueError):
            pass
    return min(found, default=32768)


def task_limit(max_processes: int) -> int:
    """The tasks a job of at most ``max_processes`` processes may have: their threads, and never
    more than a quarter of what the machine holds."""
    return max(1, min(max_processes * TASKS_PER_PROCESS, machine_tasks() // 4))


def tasks_of(pids: Iterable[int]) -> int:
    """The tasks (threads) of ``pids`` (/proc/<pid>/stat's num_threads); ended ones count none."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            total += int(stat[stat.rindex(b")") + 2:].split()[17])
        except (OSError, ValueError, IndexError):
            pass
    return total


def work_limit_mb(work: Path, env: Mapping[str, str]) -> int:
    """The megabytes ``work`` may hold: TRAINYARD_JOB_WORK_MB, else a share of its disk's free space."""
    chosen = env.get(WORK_SETTING, "")
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    try:
        free = shutil.disk_usage(work).free
    except OSError:
        free = 0
    return max(1, int(free * FREE_SHARE) >> 20)


def folder_bytes(folder: str | os.PathLike) -> int:
    """The bytes of the files below ``folder`` (links not followed, disk blocks counted: a sparse
    file counts what it holds)."""
    total = 0
    stack = [os.fspath(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        pass
        except OSError:
            pass
    return total


def over_tasks(limit: int) -> str:
    return (f"the network started more than {limit} tasks (processes and threads), the most a "
            "training job running user code may have; they were stopped")


def over_work(limit_mb: int) -> str:
    return (f"the job wrote more than {limit_mb} MB into its work folder, the most it may hold "
            f"({WORK_SETTING}); it was stopped")
