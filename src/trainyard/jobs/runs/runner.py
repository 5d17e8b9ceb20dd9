"""Start each job as a subprocess in its own process group, and stop it.

A crash in a job never takes the server down: the job runs as ``python -m <entry> JOBDIR`` in a
new session; abort is SIGTERM to the whole group, then SIGKILL after a grace period. A
foreground job's process is tethered to its command (core/tethered.py): it dies with it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil

from trainyard.core import jobfiles
from trainyard.core.environment import child_environment
from trainyard.core.events import read_events
from trainyard.core.formatting import process_end
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.core.tethered import command as tethered_command
from trainyard.jobs.runs.sandbox import sandboxed
from trainyard.jobs.scheduling.gpu_devices import lease_environment
from trainyard.jobs.store.confinement import Confinement
from trainyard.sandbox import recorded as recorded_confinement


def launch(command: list[str], folder: JobFolder, gpu_ids: list[int] | None, confinement: Confinement,
           tethered: bool = False, lease: dict[str, str] | None = None) -> subprocess.Popen:
    """Run ``command`` for a job, its output going to output.txt in the server's part of its
    folder (core/paths.py: the job holds a descriptor of it, never its name); a job whose
    network is user code runs confined (jobs/runs/sandbox.py), as ``confinement`` (the store's
    record of the job, jobs/store/confinement.py) says, never as its folder says.

    ``tethered``: the kernel kills it when this process dies, even by SIGKILL (a foreground
    job); a server's jobs outlive the server, whose next start adopts them. ``lease``: the
    variables that show the job its GPUs (`Pools.environment`: their UUIDs); by default the
    server's own entries for ``gpu_ids``."""
    command = sandboxed(command, folder, gpu_ids, confinement)
    # A job sees only the GPUs it leased; a CPU job sees none, so it cannot grab one by accident.
    # It runs user code (custom networks), so it never sees the server's token.
    env = child_environment(**(lease if lease is not None else lease_environment({}, gpu_ids or [])))
    env.setdefault("PYTHONUNBUFFERED", "1")
    # A cluster job's launcher hands the record to the nodes that confine its ranks (sandbox/recorded.py).
    env[recorded_confinement.VARIABLE] = recorded_confinement.encode(
        confinement.user_code, confinement.reads, confinement.processes, confinement.nnodes, confinement.on_cluster)
    # The server's part, which the job cannot write; opened beneath it without links all the same
    # (a job made before the split kept its output.txt among its own files).
    output = jobfiles.open_append(folder.path, folder.output.name)
    try:
        return subprocess.Popen(
            tethered_command(os.getpid(), command) if tethered else command,
            cwd=folder.work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        os.close(output)


def terminate_group(pid: int, grace_s: float, child: subprocess.Popen | None = None) -> None:
    """SIGTERM the job's process group, then SIGKILL whatever is left after ``grace_s``.

    With ``child`` (the Popen, when this process started the job) the wait is exact; otherwise
    the group is polled.
    """
    try:
        pgid = os.getpgid(pid)
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if child is not None:
        try:
            child.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _kill(pgid)
            child.wait(timeout=10)
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.1)
    _kill(pgid)


def _kill(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.info["pid"]) == pgid and _still_running(proc):
                return True
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return False


def _still_running(proc: psutil.Process) -> bool:
    """Zombies still count for killpg, though finished; but a leader whose main thread exited
    also reads as a zombie while its other threads run (Linux lists them under /proc/PID/task)."""
    if proc.info["status"] != psutil.STATUS_ZOMBIE:
        return True
    try:
        return len(os.listdir(f"/proc/{proc.info['pid']}/task")) > 1
    except OSError:
        return False


def final_status(folder: JobFolder, returncode: int | None, abort_requested: bool,
                 since: float | None = None) -> tuple[Status, str | None]:
    """Decide how a finished job ended, from its last status event and its exit code. ``since``:
    when this attempt started (the store's ``started_at``): an earlier attempt's "done" or
    "failed" does not decide how a resumed one ended, should it die before reporting anything."""
    reported = reported_end(folder, since)
    if reported is not None:
        return reported
    if abort_requested:
        return Status.ABORTED, None
    if returncode == 0:
        return Status.FAILED, "the job exited without reporting a result"
    rank = _failed_rank(folder)
    if rank is not None:
        return Status.FAILED, f"training process rank {rank[0]} died ({process_end(rank[1])}); see output.txt"
    return Status.FAILED, f"the job process died ({process_end(returncode)}); see its log"


def reported_end(folder: JobFolder, since: float | None = None) -> tuple[Status, str | None] | None:
    """How the job said it ended, by its last status event since ``since`` (done, failed or
    aborted, with its error); None when it has not said."""
    last = None
    for event in read_events(folder.events, {"status"}):
        if since is None or event.get("time", since) >= since:
            last = event
    if last and last.get("status") in (Status.DONE, Status.FAILED, Status.ABORTED):
        return Status(last["status"]), last.get("error")
    return None


# torch.distributed.run's report of the worker that failed first: "Root Cause ... rank : 1
# (local_rank: 1) ... exitcode : -9". Read when rank 0 itself could not report (it was the one).
_ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)


def _failed_rank(folder: JobFolder) -> tuple[int, int] | None:
    match = _ROOT_CAUSE.search(tail_text(folder.output, 8000))
    return (int(match.group(1)), int(match.group(2))) if match else None


def tail_text(path: Path, max_bytes: int = 4000) -> str:
    """The end of a job's text file, for error messages and log panels: read as the server reads
    every file the job writes (core/jobfiles.py: no link, no FIFO, at most ``max_bytes``)."""
    return jobfiles.tail_text(path.parent, path.name, max_bytes)
