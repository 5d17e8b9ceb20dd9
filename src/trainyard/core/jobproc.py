"""The scaffold every job process runs its body in: stop flag, abort, failure, exit codes, progress.

A job's entry point (``python -m trainyard.<kind>.run JOB_DIR``) builds its EventWriter and hands
its body to `run_job`, which

- installs a SIGTERM/SIGINT/SIGHUP handler for the body's duration and puts the previous handlers back
  afterwards (job mains also run inside tests and the foreground CLI);
- reports ``running``, then ``done`` when the body returns;
- on `Aborted` (the body saw the stop flag, or the handler raised it) logs a note, reports
  ``aborted`` and returns `EXIT_ABORTED`;
- on any other exception writes the traceback to log.txt, reports ``failed`` with a message for
  the user and returns `EXIT_FAILED`; a rank that does not report (its events inactive) hands
  the message to ``unreported`` instead.

A job whose body ran in other processes that reported for it (a cluster job's ranks: rank 0
writes the events) ends through `report_end`, which reports only what they left unsaid.

`Progress` is the throttled progress reporter the bodies share. `exit_process` ends a job process
without the interpreter's teardown. Torch-free, like all of core.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from trainyard.core.events import EventWriter
from trainyard.core.status import FINAL_STATUSES, Status

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_ABORTED = 128 + signal.SIGTERM  # what a shell reports for a process killed by SIGTERM
EXIT_PAUSED = 75  # EX_TEMPFAIL: stopped on purpose, to go on elsewhere (`Paused`)

# SIGHUP too: a closed terminal, systemd or a CI timeout stops the job as an abort does
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
IMPORT_POLL_S = 0.02  # how often a stop that came during an import looks for its end


class Aborted(BaseException):
    """The job was asked to stop (SIGTERM, SIGINT or SIGHUP).

    A BaseException, like KeyboardInterrupt, on purpose: with ``raise_at_once`` the signal
    handler raises it wherever the main thread happens to be, and code there that catches
    ``Exception`` (a decoder skipping a bad image, say) must not swallow an abort as an error.
    """


class StopFlag:
    """Set by SIGTERM/SIGINT/SIGHUP while installed; bodies poll it (``stop()``) between steps.

    With ``raise_at_once`` the handler also raises `Aborted` in the main thread, for bodies
    with no step boundary to poll at (a dataset build inside a decode pipeline); never in the
    middle of an import, though: it waits for the import to end (`_after_import`).
    """

    def __init__(self) -> None:
        self.signal: int | None = None
        self.raise_at_once = False  # run_job arms it while a body that asked for it runs
        self._waiter: threading.Thread | None = None

    def __call__(self) -> bool:
        return self.signal is not None

    def check(self) -> None:
        """Raise `Aborted` if a stop was asked for."""
        if self.signal is not None:
            raise Aborted()

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopFlag]:
        """Handle the stop signals inside the block; the previous handlers are back after it."""
        previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        self.signal = signum
        if self.raise_at_once:
            if importing(frame):  # see _after_import
                self._after_import(signum)
                return
            raise Aborted()

    def _after_import(self, signum: int) -> None:
        """Deliver the stop once the main thread's import is over, not inside it.

        An exception raised while a module runs its top level leaves that module half made; for
        a C extension such as numpy's a second import then fails, and the job ended ``failed``
        with numpy's "PLEASE READ THIS" advice instead of ``aborted``. So a watcher waits for
        the import to finish and sends the signal again; the handler then raises."""
        if self._waiter is not None and self._waiter.is_alive():
            return
        main = threading.main_thread().ident

        def wait() -> None:
            while self.raise_at_once:
                frame = sys._current_frames().get(main) if main is not None else None
                if frame is None:
                    return
                if not importing(frame):
                    os.kill(os.getpid(), signum)
                    return
                time.sleep(IMPORT_POLL_S)

        self._waiter = threading.Thread(target=wait, name="trainyard-stop-after-import", daemon=True)
        self._waiter.start()


def importing(frame) -> bool:
    """Whether ``frame`` (or a caller of it) is the import system running a module."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class Progress:
    """``progress`` events of one phase, at most one per ``every_s`` (the last one always), with an ETA.

    Called as ``progress(done, total)``; `report` also takes another phase name, ``force`` and
    ``overall`` (done, total) when the ETA is for more than this phase. `report` returns
    whether it reported, so a caller can send more with each event.
    """

    def __init__(self, events: EventWriter, phase: str = "", every_s: float = 0.25):
        self.events, self.phase, self.every_s = events, phase, every_s
        self.started = self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        self.report(done, total)

    def report(self, done: int, total: int, phase: str | None = None, force: bool = False,
               overall: tuple[int, int] | None = None) -> bool:
        now = time.monotonic()
        if not force and done < total and now - self.last < self.every_s:
            return False
        self.last = now
        all_done, all_total = overall or (done, total)
        eta = (now - self.started) / all_done * (all_total - all_done) if all_done and all_total else None
        self.events.progress(done, total, self.phase if phase is None else phase,
                             None if eta is None else round(eta, 1))
        return True


class Paused(Aborted):
    """Stopped on purpose at a checkpoint, to go on in another process: an elastic cluster job
    that grows to more workers. Not an end of the job: no status is reported, only ``note``."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


def one_line(error: BaseException) -> str:
    """The default message for the user: the first line of the error's text, or its type when
    it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def run_job(events: EventWriter, body: Callable[[StopFlag], Any], *, aborted_note: str = "aborted",
            describe: Callable[[Exception], str] = one_line, raise_at_once: bool = False,
            unreported: Callable[[str], None] | None = None) -> int:
    """Run ``body(stop)`` as the job reporting to ``events`` (closed at the end); the exit code.

    ``describe`` turns an exception into the user's message. ``unreported(message)`` is called
    instead of reporting when ``events.active`` is false (a rank that does not report).
    """
    stop = StopFlag()
    with stop.installed(), events:
        events.status(Status.RUNNING)
        try:
            try:
                stop.raise_at_once = raise_at_once  # armed only while the body runs
                stop.check()  # a signal that came before the body began
                body(stop)
            finally:
                stop.raise_at_once = False  # from here a late signal must not interrupt the report
        except Paused as paused:
            events.log(paused.note)
            return EXIT_PAUSED
        except Aborted:
            events.log(aborted_note, "warning")
            events.status(Status.ABORTED)
            return EXIT_ABORTED
        except Exception as error:
            message = describe(error)
            if getattr(events, "active", True):
                report_failed(events, message)
            elif unreported is not None:
                unreported(message)
            return EXIT_FAILED
        events.status(Status.DONE)
    return EXIT_OK


def report_failed(events: EventWriter, message: str) -> None:
    """Log the message, append the traceback being handled to log.txt and report ``failed``."""
    events.log(message, "error")
    with open(events.job_dir / "log.txt", "a", encoding="utf-8") as log:
        log.write(traceback.format_exc())
    events.status(Status.FAILED, error=message)


def report_end(events: EventWriter, status: Status, message: str | None, reported: str | None) -> int:
    """End a job that others reported for (``reported``: the last status they wrote); the exit code.

    Done: they said so. Aborted: said here unless they already ended it. Failed: said here with
    ``message`` (it knows more than they could, e.g. which node was lost), or with a pointer to
    their output when they ended without a final status.
    """
    if status == Status.DONE:
        return EXIT_OK
    if status == Status.ABORTED:
        if reported not in FINAL_STATUSES:
            events.status(Status.ABORTED)
        return EXIT_ABORTED
    if message or reported not in FINAL_STATUSES:
        message = message or "the training processes ended without reporting a result; see output-rank-*.txt"
        events.log(message, "error")
        events.status(Status.FAILED, error=message)
    return EXIT_FAILED


def exit_process(code: int, *, exit_handlers: bool = True) -> None:
    """End this job process with ``code``, skipping the interpreter's teardown when it is safe.

    Once the job has reported and closed its files, tearing down torch's modules only costs
    time: about a second of garbage collection and deallocation, which the user waiting on the
    job's end (the foreground CLI, the next queued job) would wait through. For a rank of a
    distributed job the teardown is also a hazard: a thread of its process group may still ask
    for the GIL during it, which aborts the rank (training/run.py). The exit handlers still run
    (``atexit``, ``weakref.finalize``); with another thread still working, or a child process to
    reap, the process exits the ordinary way, which waits for them. Without
    ``exit_handlers`` (a cluster launcher: Ray's handlers would wait on a head that may be gone)
    it exits at once, whatever is still running.
    """
    if exit_handlers:
        others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
        if others or _has_children():
            sys.exit(code)
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _has_children() -> bool:
    # multiprocessing's own exit handler joins its children; only it knows them
    children = sys.modules.get("multiprocessing")
    return bool(children and children.active_children())
