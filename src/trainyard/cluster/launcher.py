"""Entry point of a model job in cluster mode: ``python -m trainyard.cluster.launcher JOB_DIR``.

Started by the runner in place of torch.distributed.run (the job's process group, abort is
SIGTERM to it). Connects to the Ray cluster, then runs `attempt.Attempt`s: place the ranks
(status ``waiting`` with what is missing meanwhile), check storage, run the training entry
point on every rank, watch. A lost rank (killed, its node gone) ends the attempt; with
``max_restarts`` left the job runs again from its last checkpoint, exactly as a local resume
does (run.py resumes by itself), on whatever resources Ray places it on.

A lost head (the GCS: attempt.HeadLost) ends the job ``failed`` with that message; with
restarts left the launcher waits (status ``waiting``) for a head to answer at RAY_ADDRESS
again and then replaces itself (exec, same pid: the job's process stays the one its manager
watches) with a fresh launcher, as Ray's driver cannot join a new head. Ray's driver would end
this process about a minute after its head went; it is given longer, so that the launcher
reports first.

It writes to events.jsonl only while no training process runs (before placement and after the
ranks ended), so rank 0 stays the only writer during training, even when the folder is shared
over NFS. Exit codes as run.py's: 0 done, 1 failed, 143 aborted.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from trainyard.cluster.attempt import Attempt, Outcome
from trainyard.cluster.connect import ClusterUnavailable, address, connect, unreachable
from trainyard.cluster.job_spec import LaunchSpec, read_launch_spec
from trainyard.cluster.placement import Placement
from trainyard.core.events import EventWriter, read_events
from trainyard.core.jobproc import StopFlag, exit_process, report_end
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status

HEAD_WAIT_S = 2.0
RECONNECT_TIMEOUT = "RAY_gcs_rpc_server_reconnect_timeout_s"  # Ray's own setting, read at ray.init


def main(job_dir: str | Path, number: int = 0) -> int:
    folder = JobFolder(job_dir)
    os.environ.setdefault(RECONNECT_TIMEOUT, "600")
    with EventWriter(folder.path) as events:
        try:
            spec = read_launch_spec(folder.spec)
            ray = connect()
            if number:  # exec'd by `restart` once a head answered again: say so, not the ranks' "aborted"
                events.log(f"resumed after the cluster came back (restart {number} of {spec.max_restarts})")
            with StopFlag().installed() as stop:  # after ray.init, which installs handlers of its own
                outcome = run_attempts(ray, folder, spec, events, stop, number)
                if outcome.kind == "head" and number < spec.max_restarts and not stop():
                    outcome = wait_for_head(events, outcome, stop)
                    if outcome.kind == "head":
                        events.close()
                        restart(folder, number + 1)
        except ClusterUnavailable as exc:
            outcome = Outcome(Status.FAILED, str(exc))
        except Exception as exc:  # a defect, or Ray failing under us: the job fails, it says why
            traceback.print_exc()
            outcome = Outcome(Status.FAILED, f"cluster launcher: {type(exc).__name__}: {exc}")
        return finish(folder, events, outcome)


def run_attempts(ray, folder: JobFolder, spec: LaunchSpec, events: EventWriter, stop: StopFlag,
                 number: int = 0) -> Outcome:
    placement = Placement.from_spec(spec)
    restarts = spec.max_restarts
    while True:
        outcome = Attempt(ray, folder, spec, placement, events, stop, number).run()
        if outcome.kind != "lost" or number >= restarts or stop():
            return outcome
        number += 1
        events.log(f"{outcome.message}; resuming from the last checkpoint (restart {number} of {restarts})",
                   "warning")


def wait_for_head(events: EventWriter, lost: Outcome, stop: StopFlag) -> Outcome:
    """Until a head answers at RAY_ADDRESS again: ``lost`` then (a restart is due), or aborted."""
    value = address()
    events.log(f"{lost.message}; waiting for a head at RAY_ADDRESS={value} to resume from the last checkpoint",
               "warning")
    events.emit("status", status=Status.WAITING, error=None,
                detail=f"waiting for the Ray cluster's head at RAY_ADDRESS={value} to answer again")
    while unreachable(value, timeout_s=1.0):
        if _sleep_unless(stop):
            return Outcome(Status.ABORTED)
    return lost


def _sleep_unless(stop: StopFlag) -> bool:
    deadline = time.monotonic() + HEAD_WAIT_S
    while time.monotonic() < deadline and not stop():
        time.sleep(0.1)
    return stop()


def restart(folder: JobFolder, number: int) -> None:
    """This process becomes a fresh launcher of the job (attempt ``number``): never returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "trainyard.cluster.launcher", str(folder.path), str(number)])


def finish(folder: JobFolder, events: EventWriter, outcome: Outcome) -> int:
    """Record how the job ended where its ranks could not (core/jobproc.py), and return the exit code."""
    # a lost node, a lost head, a full disk: each ends the job failed, with its message
    status = Status(outcome.kind) if outcome.kind in (Status.DONE, Status.ABORTED) else Status.FAILED
    return report_end(events, status, outcome.message, _last_status(folder))


def _last_status(folder: JobFolder) -> str | None:
    last = None
    for event in read_events(folder.events, {"status"}):
        last = event.get("status")
    return last


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python -m trainyard.cluster.launcher JOB_DIR [RESTARTS_USED]")
    # no waiting on Ray's exit hooks (or on a join that never answered)
    exit_process(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 0), exit_handlers=False)
