"""A stop that lands while the job body is importing a library aborts the job once the import
is over: never half-way through it (numpy, interrupted there, cannot be imported again, and the
job ended ``failed`` with numpy's "PLEASE READ THIS" message instead of ``aborted``)."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from trainyard.core.events import EventWriter, read_events
from trainyard.core.jobproc import EXIT_ABORTED, run_job

# Like a C extension, this module cannot run its top level twice: a second run after an
# interrupted first one fails, as numpy's import does.
SLOW_MODULE = '''
import pathlib, time
here = pathlib.Path(__file__).parent
if (here / "started").exists() and not (here / "finished").exists():
    raise ImportError("half imported before: PLEASE READ THIS")
(here / "started").touch()
while not (here / "go").exists():
    time.sleep(0.01)
(here / "finished").touch()
complete = True
'''


def test_a_stop_during_an_import_aborts_after_it(tmp_path: Path, monkeypatch):
    library = tmp_path / "lib"
    library.mkdir()
    (library / "slow_library.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(library))
    monkeypatch.delitem(sys.modules, "slow_library", raising=False)

    def stop_mid_import() -> None:
        deadline = time.monotonic() + 120
        while not (library / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the library's top level runs
        time.sleep(0.3)
        (library / "go").touch()

    def body(stop) -> None:
        importlib.import_module("slow_library")
        time.sleep(120)  # a body that never polls: only raise_at_once can end it

    helper = threading.Thread(target=stop_mid_import, daemon=True)
    helper.start()
    started = time.monotonic()
    assert run_job(EventWriter(tmp_path), body, raise_at_once=True) == EXIT_ABORTED
    assert time.monotonic() - started < 100
    helper.join(timeout=30)
    assert importlib.import_module("slow_library").complete  # imported whole, usable afterwards
    assert [e["status"] for e in read_events(tmp_path / "events.jsonl", {"status"})] == ["running", "aborted"]
