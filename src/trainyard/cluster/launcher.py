"""Entry point of a model job in cluster mode: ``python -m trainyard.cluster.launcher JOB_DIR``.

Started by the runner in place of torch.distributed.run (the job's process group, abort is
SIGTERM to it). Connects to the Ray cluster, then runs `attempt.Attempt`s: place the ranks
(status ``waiting`` with what is missing meanwhile), check storage, run the training entry
point on every rank, watch. A lost rank (killed, its node gone) ends the attempt; with
``max_restarts`` left the job runs again from its last checkpoint, exactly as a local resume
does (run.py resumes by itself), on whatever resources Ray places it on.

A lost head (the GCS: outcome.HeadLost) ends the job ``failed`` with that message; with
restarts left the launcher waits (status ``waiting``) for a head to answer at RAY_ADDRESS
again and then replaces itself (exec, same pid: the job's process stays the one its manager
watches) with a fresh launcher, as Ray's driver cannot join a new head. Ray's driver would end
this process about a minute after its head went; it is given longer, so that the launcher
reports first.

It writes to events.jsonl only while no training process runs (before placement and after the
ranks ended), so rank 0 stays the only writer during training, even when the folder is shared
over NFS. Exit codes as run.py's: 0 done, 1 failed, 143 aborted.

The fence (core/fence.py): each launcher is a launch of its own (a token), which it writes into
the job's fence as it starts, so the ranks of any earlier launch of the job (a launcher cut off
with its host, whose job another server ended) stop within seconds. Once a server has ended
this launch (it found the launcher's host silent), the launcher stops its ranks and writes
nothing more into the job (`FencedEvents`).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from trainyard.cluster.attempt import Attempt
from trainyard.cluster.connect import ClusterUnavailable, address, connect, unreachable
from trainyard.cluster.elastic import GrowWatch, fitting, free_workers
from trainyard.cluster.job_spec import LaunchSpec, read_launch_spec
from trainyard.cluster.outcome import Ending, FailureDecision, Outcome, decide
from trainyard.cluster.placement import Placement
from trainyard.cluster.previous_runs import launch_token
from trainyard.core import fence
from trainyard.core.events import EventWriter, read_events
from trainyard.core.jobproc import StopFlag, exit_process, one_line, report_end
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status

HEAD_WAIT_S = 2.0
RECONNECT_TIMEOUT = "RAY_gcs_rpc_server_reconnect_timeout_s"  # Ray's own setting, read at ray.init


class FencedEvents(EventWriter):
    """The launcher's events, dropped once a server has ended its launch (``fenced`` says why)."""

    def __init__(self, job_dir: str | Path, fenced: Callable[[], str | None]):
        super().__init__(job_dir)
        self.fenced = fenced

    def emit(self, type: str, **fields) -> dict:
        return {"type": type, **fields} if self.fenced() else super().emit(type, **fields)

    def log(self, message: str, level: str = "info") -> None:
        if not self.fenced():
            super().log(message, level)


def main(job_dir: str | Path, number: int = 0) -> int:
    folder = JobFolder(job_dir)
    os.environ.setdefault(RECONNECT_TIMEOUT, "600")
    launch = launch_token()
    fence.begin(folder.work, launch)  # an earlier launch's ranks, wherever they run, stop now
    ended_by_server = fence.Watch(folder.work, launch, ended_by=("server",)).reason
    with FencedEvents(folder.work, ended_by_server) as events:
        try:
            spec = read_launch_spec(folder.spec)
            ray = connect()
            if number:  # exec'd by `restart` once a head answered again: say so, not the ranks' "aborted"
                events.log(f"resumed after the cluster came back (restart {number} of {spec.max_restarts})")
            with StopFlag().installed() as flag:  # after ray.init, which installs handlers of its own
                def stop() -> bool:
                    return flag() or ended_by_server() is not None

                outcome = run_attempts(ray, folder, spec, events, stop, number, launch)
                if decide(outcome, number, spec.max_restarts, stop()) is FailureDecision.AWAIT_HEAD:
                    if wait_for_head(events, outcome, stop):
                        events.close()
                        restart(folder, number + 1)
                    outcome = Outcome(Ending.ABORTED)
        except ClusterUnavailable as exc:
            outcome = Outcome(Ending.FAILED, str(exc))
        except Exception as exc:  # a defect, or Ray failing under us: the job fails, it says why
            traceback.print_exc()
            outcome = Outcome(Ending.FAILED, f"cluster launcher: {type(exc).__name__}: {one_line(exc)}")
        return finish(folder, events, outcome)


def run_attempts(ray, folder: JobFolder, spec: LaunchSpec, events: EventWriter, stop: Callable[[], bool],
                 number: int = 0, launch: str | None = None) -> Outcome:
    """Attempts until one ends the job: after a lost rank, the next resumes from the last
    checkpoint (a restart, counted against max_restarts, at the same size; an elastic job's
    shrink to the workers left after a lost worker, or its growth back, is not counted). A
    training process killed on a node that still answers is a restart for an elastic job too:
    the node is there, and shrinking on it (by Ray's lagging free count) would let a crash that
    recurs go round for ever, never counted."""
    full = Placement.from_spec(spec)
    placement, used, launch = full, number, launch or launch_token()
    lost: frozenset[str] = frozenset()  # nodes where a worker went away
    while True:
        grow = (GrowWatch(ray, full.resource, full.workers, spec.min_workers, placement.workers, lost)
                if spec.min_workers and placement.workers < full.workers else None)
        outcome = Attempt(ray, folder, spec, placement, events, stop, number, launch, grow).run()
        number += 1
        if outcome.ending is Ending.RESIZE and grow is not None and grow.asked and not stop():
            placement = Placement(grow.asked, full.device)
            events.log(f"nodes returned: growing back to {grow.asked} of {full.workers} workers from the "
                       "checkpoint at this epoch's end (elastic)")
            continue
        if outcome.ending is Ending.LOST and spec.min_workers and outcome.worker_gone and not stop():
            lost |= frozenset(outcome.lost_nodes)
            size = fitting(full.workers, spec.min_workers, free_workers(ray, full.resource, lost))
            if size < placement.workers:  # a shrink, not a restart
                placement = Placement(size, full.device)
                events.log(f"{outcome.message}; continuing from the last checkpoint on {size} of {full.workers} "
                           "workers, with the same global batch (elastic)", "warning")
                continue
        if decide(outcome, used, spec.max_restarts, stop()) is not FailureDecision.RETRY:
            return _said_for_elastic(outcome, spec)
        used += 1
        events.log(f"{outcome.message}; resuming from the last checkpoint (restart {used} of {spec.max_restarts})",
                   "warning")


def _said_for_elastic(outcome: Outcome, spec: LaunchSpec) -> Outcome:
    """An elastic job's training process killed on a node that still answers (the kernel's
    OOM killer, a crash) is no lost node: it ends the job like any other job's, saying so."""
    if outcome.ending is not Ending.LOST or not spec.min_workers or outcome.worker_gone:
        return outcome
    return Outcome(outcome.ending, f"{outcome.message} (its node still answers: an elastic job goes on with "
                                   "fewer workers only when one is lost; --max-restarts N restarts it after a crash)")


def wait_for_head(events: EventWriter, lost: Outcome, stop: Callable[[], bool]) -> bool:
    """Until a head answers at RAY_ADDRESS again (True: a restart is due), or the job is stopped (False)."""
    value = address()
    events.log(f"{lost.message}; waiting for a head at RAY_ADDRESS={value} to resume from the last checkpoint",
               "warning")
    events.emit("status", status=Status.WAITING, error=None,
                detail=f"waiting for the Ray cluster's head at RAY_ADDRESS={value} to answer again")
    while unreachable(value, timeout_s=1.0):
        if _sleep_unless(stop):
            return False
    return True


def _sleep_unless(stop: Callable[[], bool]) -> bool:
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
    return report_end(events, outcome.ending.status, outcome.message, _last_status(folder))


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
