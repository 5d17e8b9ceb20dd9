"""The job-process scaffold: signal handlers, abort, failure, exit codes and throttled progress."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from trainyard.core.events import EventWriter, read_events
from trainyard.core.jobproc import EXIT_ABORTED, EXIT_FAILED, EXIT_OK, Aborted, Progress, report_end, run_job
from trainyard.core.status import Status


def statuses(job: Path) -> list[tuple[str, str | None]]:
    return [(e["status"], e["error"]) for e in read_events(job / "events.jsonl", {"status"})]


def logs(job: Path) -> list[tuple[str, str]]:
    return [(e["level"], e["message"]) for e in read_events(job / "events.jsonl", {"log"})]


def test_a_body_that_returns_is_done_and_the_signal_handlers_are_put_back(tmp_path: Path):
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    seen = {}

    def body(stop):
        seen.update({sig: signal.getsignal(sig) for sig in before})

    assert run_job(EventWriter(tmp_path), body) == EXIT_OK
    assert all(seen[sig] != before[sig] for sig in before)  # the scaffold's own, during the body
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert statuses(tmp_path) == [("running", None), ("done", None)]


def test_sigterm_sets_the_flag_the_body_polls_and_the_job_is_aborted_with_143(tmp_path: Path):
    before = signal.getsignal(signal.SIGTERM)

    def body(stop):
        assert not stop()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop()  # the handler ran: the job goes on to its next step boundary
        stop.check()
        pytest.fail("check() should have raised Aborted")

    assert run_job(EventWriter(tmp_path), body, aborted_note="aborted; kept what was written") == 143
    assert statuses(tmp_path)[-1] == ("aborted", None)
    assert ("warning", "aborted; kept what was written") in logs(tmp_path)
    assert signal.getsignal(signal.SIGTERM) == before


def test_raise_at_once_interrupts_a_body_that_never_polls(tmp_path: Path):
    def body(stop):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except Exception:  # an abort is not an error: code that catches errors lets it through
            pytest.fail("Aborted must not be an Exception")

    started = time.monotonic()
    assert run_job(EventWriter(tmp_path), body, raise_at_once=True) == EXIT_ABORTED
    assert time.monotonic() - started < 4
    assert statuses(tmp_path)[-1] == ("aborted", None)
    assert issubclass(Aborted, BaseException) and not issubclass(Aborted, Exception)


def test_an_exception_fails_with_its_message_and_the_traceback_goes_to_log_txt(tmp_path: Path):
    def body(stop):
        raise ValueError("the train folder is empty")

    assert run_job(EventWriter(tmp_path), body) == EXIT_FAILED == 1
    assert statuses(tmp_path)[-1] == ("failed", "the train folder is empty")
    assert ("error", "the train folder is empty") in logs(tmp_path)
    log = (tmp_path / "log.txt").read_text()
    assert "Traceback (most recent call last)" in log and "ValueError: the train folder is empty" in log


def test_an_exception_without_text_is_named_by_its_type_or_described_by_the_kind(tmp_path: Path):
    def body(stop):
        raise KeyError()

    assert run_job(EventWriter(tmp_path / "a"), body) == EXIT_FAILED
    assert statuses(tmp_path / "a")[-1] == ("failed", "KeyError")
    run_job(EventWriter(tmp_path / "b"), body, describe=lambda e: f"custom: {type(e).__name__}")
    assert statuses(tmp_path / "b")[-1] == ("failed", "custom: KeyError")


class Silent(EventWriter):
    """A rank that does not report: writes nothing."""

    active = False

    def __init__(self, job_dir):
        self.job_dir = Path(job_dir)

    def emit(self, type, **fields):
        return {}

    def log(self, message, level="info"):
        pass

    def close(self):
        pass


def test_a_rank_that_does_not_report_hands_its_message_on_and_writes_nothing(tmp_path: Path):
    handed = []

    def body(stop):
        raise RuntimeError("peer lost")

    assert run_job(Silent(tmp_path), body, unreported=handed.append) == EXIT_FAILED
    assert handed == ["peer lost"]
    assert not (tmp_path / "events.jsonl").exists() and not (tmp_path / "log.txt").exists()


def test_a_job_its_ranks_reported_for_ends_with_only_what_they_left_unsaid(tmp_path: Path):
    def end(name, status, message, reported):
        with EventWriter(tmp_path / name) as events:
            code = report_end(events, status, message, reported)
        return code, statuses(tmp_path / name) if (tmp_path / name / "events.jsonl").exists() else []

    assert end("done", Status.DONE, None, "done") == (EXIT_OK, [])
    assert end("aborted", Status.ABORTED, None, "aborted") == (EXIT_ABORTED, [])  # rank 0 said it
    assert end("abort", Status.ABORTED, None, "running") == (EXIT_ABORTED, [("aborted", None)])
    # A lost node: the launcher knows which, rank 0 only that "another process stopped".
    assert end("lost", Status.FAILED, "lost node ty-w2", "failed") == (EXIT_FAILED, [("failed", "lost node ty-w2")])
    assert end("said", Status.FAILED, None, "failed") == (EXIT_FAILED, [])
    code, said = end("silent", Status.FAILED, None, "running")
    assert code == EXIT_FAILED and "output-rank-*.txt" in said[0][1]


def test_progress_is_throttled_but_the_last_point_always_reported(tmp_path: Path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(sys.modules[Progress.__module__].time, "monotonic", lambda: clock[0])
    with EventWriter(tmp_path) as events:
        progress = Progress(events, "classifying", every_s=1.0)
        for done in range(1, 11):
            clock[0] += 0.25
            progress(done, 10)
    points = [(e["done"], e["phase"], e["eta"]) for e in read_events(tmp_path / "events.jsonl", {"progress"})]
    # every 4th call passes a second; the 10th is the end; the ETA is the time left at this pace
    assert points == [(4, "classifying", 1.5), (8, "classifying", 0.5), (10, "classifying", 0.0)]


EXITING = """
import atexit, sys, threading, time
from pathlib import Path
from trainyard.core.jobproc import exit_process
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
if sys.argv[2] == "thread":  # still writing when the job's body returned
    threading.Thread(target=lambda: (time.sleep(0.5), (out / "thread").write_text("done"))).start()
print("the last line of output.txt")
exit_process(3)
"""


@pytest.mark.parametrize("worker", ["none", "thread"])
def test_a_job_process_exits_with_its_code_its_output_and_exit_handlers(tmp_path: Path, worker: str):
    import subprocess

    done = subprocess.run([sys.executable, "-c", EXITING, str(tmp_path), worker], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3
    assert done.stdout == "the last line of output.txt\n"  # buffered (a pipe) and still written
    assert (tmp_path / "atexit").read_text() == "ran"
    if worker == "thread":
        assert (tmp_path / "thread").read_text() == "done"  # waited for, not cut off
