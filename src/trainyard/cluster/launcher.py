"""Entry point of a model job in cluster mode: ``python -m trainyard.cluster.launcher JOB_DIR``.

Started by the runner in place of torch.distributed.run (the job's process group, abort is
SIGTERM to it). Connects to the Ray cluster, then runs `attempt.Attempt`s: place the ranks
(status ``waiting`` with what is missing meanwhile), check storage, run the training entry
point on every rank, watch. A lost rank (killed, its node gone) ends the attempt; with
``max_restarts`` left the job runs again from its last checkpoint, exactly as a local resume
does (run.py resumes by itself), on whatever resources Ray places it on.

It writes to events.jsonl only while no training process runs (before placement and after the
ranks ended), so rank 0 stays the only writer during training, even when the folder is shared
over NFS. Exit codes as run.py's: 0 done, 1 failed, 143 aborted.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from trainyard.cluster.attempt import Attempt, Outcome
from trainyard.cluster.connect import ClusterUnavailable, connect
from trainyard.cluster.placement import Placement
from trainyard.core.events import EventWriter, read_events
from trainyard.core.files import read_json
from trainyard.core.jobproc import EXIT_ABORTED, EXIT_FAILED, StopFlag
from trainyard.core.paths import JobFolder
from trainyard.core.status import FINAL_STATUSES


def main(job_dir: str | Path) -> int:
    folder = JobFolder(job_dir)
    with EventWriter(folder.path) as events:
        try:
            spec = read_json(folder.spec)
            ray = connect()
            with StopFlag().installed() as stop:  # after ray.init, which installs handlers of its own
                outcome = run_attempts(ray, folder, spec, events, stop)
        except ClusterUnavailable as exc:
            outcome = Outcome("failed", str(exc))
        except Exception as exc:  # a defect, or Ray failing under us: the job fails, it says why
            traceback.print_exc()
            outcome = Outcome("failed", f"cluster launcher: {type(exc).__name__}: {exc}")
        return finish(folder, events, outcome)


def run_attempts(ray, folder: JobFolder, spec: dict, events: EventWriter, stop: StopFlag) -> Outcome:
    placement = Placement.from_spec(spec)
    restarts = int(spec.get("max_restarts") or 0)
    number = 0
    while True:
        outcome = Attempt(ray, folder, spec, placement, events, stop, number).run()
        if outcome.kind != "lost" or number >= restarts or stop():
            return outcome
        number += 1
        events.log(f"{outcome.message}; resuming from the last checkpoint (restart {number} of {restarts})",
                   "warning")


def finish(folder: JobFolder, events: EventWriter, outcome: Outcome) -> int:
    """Record how the job ended where its ranks could not, and return the exit code."""
    last = _last_status(folder)
    if outcome.kind == "done":
        return 0
    if outcome.kind == "aborted":
        if last not in FINAL_STATUSES:
            events.status("aborted")
        return EXIT_ABORTED
    if outcome.message or last not in FINAL_STATUSES:
        # a lost rank's node and signal say more than rank 0's "another process stopped"
        message = outcome.message or "the training processes ended without reporting a result; see output-rank-*.txt"
        events.log(message, "error")
        events.status("failed", error=message)
    return EXIT_FAILED


def _last_status(folder: JobFolder) -> str | None:
    last = None
    for event in read_events(folder.events, {"status"}):
        last = event.get("status")
    return last


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.cluster.launcher JOB_DIR")
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no waiting on Ray's exit hooks (or on a join that never answered)
