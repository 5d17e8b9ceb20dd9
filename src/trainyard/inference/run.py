"""Entry point of an inference job: ``python -m trainyard.inference.run JOB_DIR``.

Reads JOB_DIR/spec.json (an `InferenceSpec`), reports ``running``, runs classify-many or
evaluate with progress events, writes the results into its work folder and reports ``done``. A failure
reports ``failed`` with a message (traceback in log.txt) and exits 1; SIGTERM (abort) stops
between batches, reports ``aborted`` and exits 143, keeping the rows already written. The
process scaffold (stop signals, reporting, exit codes, progress) is core.jobproc's.

Like a training job, this process imports no web, database or scheduler code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainyard.core.events import EventWriter
from trainyard.core.files import read_json
from trainyard.core.jobproc import Progress, StopFlag, exit_process, run_job
from trainyard.core.paths import JobFolder


def main(job_dir: str | Path) -> int:
    folder = JobFolder(job_dir)
    events = EventWriter(folder.work)
    return run_job(events, lambda stop: _run(folder, events, stop),
                   aborted_note="aborted; the results written so far are kept")


def _run(folder: JobFolder, events: EventWriter, stop: StopFlag) -> None:
    # Imported here so that a broken install still reports "failed".
    from trainyard.inference.spec import InferenceSpec
    from trainyard.inference.tasks import run_classify_many, run_evaluate

    spec = InferenceSpec.model_validate(read_json(folder.spec))
    task = run_evaluate if spec.kind == "evaluate" else run_classify_many
    events.emit("result", **task(spec, folder.work, events, Progress, stop))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.inference.run JOB_DIR")
    exit_process(main(sys.argv[1]))
