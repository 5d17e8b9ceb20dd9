"""Dataset job entry point: ``python -m trainyard.datasets.run JOB_DIR``.

Reads JOB_DIR/spec.json, builds the dataset into its work folder's ``dataset`` and reports
through the work folder's events.jsonl (core/paths.py's JobFolder): status running, progress,
result, then status done, failed (exit code 1, traceback in log.txt) or aborted (SIGTERM/SIGINT:
exit code 143 after removing the partial build). The process scaffold (stop signals, reporting,
exit codes) is core.jobproc's.
"""

from __future__ import annotations

import sys

from trainyard.core.errors import validated
from trainyard.core.events import EventWriter
from trainyard.core.files import read_json
from trainyard.core.gc_control import imports_without_collection
from trainyard.core.jobproc import StopFlag, exit_process, run_job
from trainyard.core.paths import JobFolder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m trainyard.datasets.run JOB_DIR", file=sys.stderr)
        return 2
    folder = JobFolder(args[0])  # it writes its work folder only; its spec is the server's
    events = EventWriter(folder.work)
    # The build has no step boundary to poll at: the signal raises Aborted where it lands, and
    # build_dataset removes dataset.tmp on its way out.
    return run_job(events, lambda stop: _build(folder, events, stop), raise_at_once=True)


def _build(folder: JobFolder, events: EventWriter, stop: StopFlag) -> None:
    # Imported here so that even an import failure is reported as a failed job.
    with imports_without_collection():
        from trainyard.datasets.build import build_dataset

    build_dataset(_load_spec(folder), folder.work, events)


def _load_spec(folder: JobFolder):
    # The spec (pydantic) is imported here, not at the top: spawned decode workers import this
    # module as their __main__, and should not pay for pydantic.
    from trainyard.datasets.spec import DatasetSpec

    return validated(DatasetSpec, read_json(folder.spec), what="invalid spec.json")


if __name__ == "__main__":
    exit_process(main())
