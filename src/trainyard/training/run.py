"""Entry point of a model job: ``python -m trainyard.training.run JOB_DIR``.

Reads JOB_DIR/spec.json, reports ``running``, continues from the job's latest checkpoint if it
has one (so a job killed at any moment resumes exactly where its last snapshot left it), trains,
and reports ``done``. A failure reports ``failed`` with a message for the user (the traceback
goes to log.txt) and exits 1. SIGTERM (abort) or SIGINT stops at the next step boundary,
reports ``aborted`` and exits 143; the checkpoints already written stay.

This process imports nothing from the web, database or scheduler code: it reads its job folder
and writes to it.
"""

from __future__ import annotations

import signal
import sys
import traceback
from pathlib import Path

from trainyard.core.events import EventWriter
from trainyard.core.paths import JobFolder

EXIT_FAILED = 1
EXIT_ABORTED = 128 + signal.SIGTERM


class StopFlag:
    """Set by SIGTERM/SIGINT; the training loop polls it between steps."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __call__(self) -> bool:
        return self.signal is not None

    def install(self) -> dict:
        """Handle SIGTERM and SIGINT; return the previous handlers (for `restore`)."""
        return {sig: signal.signal(sig, self._handle) for sig in (signal.SIGTERM, signal.SIGINT)}

    @staticmethod
    def restore(previous: dict) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        self.signal = signum


def main(job_dir: str | Path) -> int:
    """Run the model job in ``job_dir``; return the process exit code."""
    folder = JobFolder(job_dir)
    stop = StopFlag()
    previous = stop.install()
    try:
        with EventWriter(folder.path) as events:
            events.status("running")
            try:
                return _run(folder, events, stop)
            except Exception as e:
                message = _message(e)
                _log_traceback(folder, events, message)
                events.status("failed", error=message)
                return EXIT_FAILED
    finally:
        stop.restore(previous)  # main() may run inside another program (tests, a foreground CLI)


def _run(folder: JobFolder, events: EventWriter, stop: StopFlag) -> int:
    # Imported here, inside the caller's try, so that even a broken install reports "failed".
    from trainyard.training.checkpoint import latest_checkpoint
    from trainyard.training.loop import Aborted, train
    from trainyard.training.spec import load_spec

    spec = load_spec(folder.spec)
    try:
        train(spec, folder.path, events, resume=latest_checkpoint(folder.path), should_stop=stop)
    except Aborted:
        events.log("aborted; the checkpoints written so far are kept")
        events.status("aborted")
        return EXIT_ABORTED
    events.status("done")
    return 0


def _message(error: Exception) -> str:
    """What the user sees: our own errors speak for themselves; others get their type name."""
    try:
        from trainyard.networks import NetworkError
        from trainyard.training.checkpoint import CheckpointError
        from trainyard.training.models import PretrainedError
        from trainyard.training.setup import TrainingError
        from trainyard.training.spec import SpecError
    except Exception:  # the install itself is broken: say what failed, nothing more
        return f"{type(error).__name__}: {error}"
    if isinstance(error, NetworkError):
        return f"custom network: {error}"
    if isinstance(error, (TrainingError, SpecError, PretrainedError, CheckpointError)):
        return str(error)
    text = f"{type(error).__name__}: {str(error).strip() or 'no details'}"
    line = _custom_network_line(error)
    return f"custom network: line {line}: {text}" if line else text


def _custom_network_line(error: Exception) -> int | None:
    """The deepest line of the user's network file in the error's traceback, if it passed there."""
    from trainyard.training.models import CUSTOM_FILENAME

    lines = [n for frame, n in traceback.walk_tb(error.__traceback__)
             if frame.f_code.co_filename == CUSTOM_FILENAME]
    return lines[-1] if lines else None


def _log_traceback(folder: JobFolder, events: EventWriter, message: str) -> None:
    events.log(message, "error")
    with open(folder.log, "a", encoding="utf-8") as log:
        log.write(traceback.format_exc())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.training.run JOB_DIR")
    sys.exit(main(sys.argv[1]))
