"""Dataset job entry point: ``python -m trainyard.datasets.run JOB_DIR``.

Reads JOB_DIR/spec.json, builds the dataset into JOB_DIR/dataset and reports through
JOB_DIR/events.jsonl: status running, progress, result, then status done, failed (exit code 1,
traceback in log.txt) or aborted (on SIGTERM: exit code 0 after removing the partial build).
"""

from __future__ import annotations

import signal
import sys
import traceback
from pathlib import Path

from trainyard.core.events import EventWriter
from trainyard.core.files import read_json


class Aborted(BaseException):
    """Raised in the main thread by SIGTERM; a BaseException so no `except Exception` eats it."""


def _on_sigterm(signum, frame) -> None:
    raise Aborted()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m trainyard.datasets.run JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(args[0])
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _run(job_dir)
    finally:
        signal.signal(signal.SIGTERM, previous)  # matters when called in-process (tests)


def _run(job_dir: Path) -> int:
    with EventWriter(job_dir) as events:
        events.status("running")
        try:
            # Imported here so that even an import failure is reported as a failed job.
            from trainyard.datasets.build import build_dataset

            build_dataset(_load_spec(job_dir), job_dir, events)
        except Aborted:
            # build_dataset has already removed dataset.tmp on its way out.
            events.log("aborted", "warning")
            events.status("aborted")
            return 0
        except Exception as e:
            return _fail(events, str(e) or type(e).__name__)
        events.status("done")
    return 0


def _load_spec(job_dir: Path):
    # pydantic is imported here, not at the top: spawned decode workers import this module
    # as their __main__, and should not pay for pydantic.
    from pydantic import ValidationError

    from trainyard.datasets.spec import DatasetSpec

    try:
        return DatasetSpec.model_validate(read_json(job_dir / "spec.json"))
    except ValidationError as e:
        raise ValueError(f"invalid spec.json: {e}") from None


def _fail(events: EventWriter, message: str) -> int:
    events.log(traceback.format_exc().rstrip(), "error")
    events.status("failed", error=message)
    return 1


if __name__ == "__main__":
    sys.exit(main())
