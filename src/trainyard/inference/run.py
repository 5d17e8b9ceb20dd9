"""Entry point of an inference job: ``python -m trainyard.inference.run JOB_DIR``.

Reads JOB_DIR/spec.json (an `InferenceSpec`), reports ``running``, runs classify-many or
evaluate with progress events, writes the results into JOB_DIR and reports ``done``. A failure
reports ``failed`` with a message (traceback in log.txt) and exits 1; SIGTERM (abort) stops
between batches, reports ``aborted`` and exits 143, keeping the rows already written.

Like a training job, this process imports no web, database or scheduler code.
"""

from __future__ import annotations

import signal
import sys
import time
import traceback
from pathlib import Path

from trainyard.core.events import EventWriter
from trainyard.core.files import read_json
from trainyard.core.paths import JobFolder

EXIT_FAILED = 1
EXIT_ABORTED = 128 + signal.SIGTERM


class StopFlag:
    """Set by SIGTERM/SIGINT; the job polls it between batches."""

    signal: int | None = None

    def __call__(self) -> bool:
        return self.signal is not None

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        self.signal = signum


class Progress:
    """Progress events with an ETA, at most a few a second."""

    def __init__(self, events: EventWriter, phase: str):
        self.events, self.phase = events, phase
        self.started = self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.25 and done < total:
            return
        self.last = now
        eta = (now - self.started) / done * (total - done) if done and total else None
        self.events.progress(done, total, self.phase, eta)


def main(job_dir: str | Path) -> int:
    folder = JobFolder(job_dir)
    stop = StopFlag()
    stop.install()
    with EventWriter(folder.path) as events:
        events.status("running")
        try:
            return _run(folder, events, stop)
        except Exception as exc:
            message = str(exc).strip() or type(exc).__name__
            events.log(message, "error")
            with open(folder.log, "a", encoding="utf-8") as log:
                log.write(traceback.format_exc())
            events.status("failed", error=message)
            return EXIT_FAILED


def _run(folder: JobFolder, events: EventWriter, stop: StopFlag) -> int:
    # Imported here so that a broken install still reports "failed".
    from trainyard.inference import evaluate, many
    from trainyard.inference.tasks import run_classify_many, run_evaluate
    from trainyard.inference.spec import InferenceSpec

    spec = InferenceSpec.model_validate(read_json(folder.spec))
    task = run_evaluate if spec.kind == "evaluate" else run_classify_many
    try:
        result = task(spec, folder.path, events, Progress, stop)
    except (many.Aborted, evaluate.Aborted):
        events.log("aborted; the results written so far are kept", "warning")
        events.status("aborted")
        return EXIT_ABORTED
    events.emit("result", **result)
    events.status("done")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.inference.run JOB_DIR")
    sys.exit(main(sys.argv[1]))
