"""The dataset job entry point: status events, failures and abort."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from dataset_helpers import make_class_tree

from trainyard.core.events import read_events
from trainyard.datasets import run


def write_spec(job_dir: Path, **fields) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    spec = {"name": "t", "width": 8, "height": 8, **fields}
    (job_dir / "spec.json").write_text(json.dumps(spec))


def statuses(job_dir: Path) -> list[tuple[str, str | None]]:
    return [(e["status"], e["error"]) for e in read_events(job_dir / "events.jsonl", {"status"})]


def test_successful_job_in_a_subprocess(tmp_path: Path):
    make_class_tree(tmp_path / "images", {"a": 3, "b": 3})
    job = tmp_path / "job"
    write_spec(job, train_folder=str(tmp_path / "images"))
    proc = subprocess.run([sys.executable, "-m", "trainyard.datasets.run", str(job)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert statuses(job) == [("running", None), ("done", None)]
    assert (job / "dataset" / "info.json").is_file()


def test_failed_job_reports_error_and_traceback(tmp_path: Path):
    job = tmp_path / "job"
    write_spec(job, train_folder=str(tmp_path / "missing"))
    assert run.main([str(job)]) == 1
    (status, error), = statuses(job)[1:]
    assert status == "failed" and "train folder not found" in error
    assert "Traceback" in (job / "log.txt").read_text()
    assert not (job / "dataset").exists()


def test_invalid_spec_fails(tmp_path: Path):
    job = tmp_path / "job"
    write_spec(job)  # no training source
    assert run.main([str(job)]) == 1
    assert "invalid spec.json" in statuses(job)[-1][1]


def test_sigterm_aborts_and_removes_partial_build(tmp_path: Path, monkeypatch):
    make_class_tree(tmp_path / "images", {"a": 3, "b": 3})
    job = tmp_path / "job"
    write_spec(job, train_folder=str(tmp_path / "images"))
    import trainyard.datasets.build as build_module
    import trainyard.datasets.pipeline as pipeline_module

    def chunk_then_sigterm(*args):
        assert (job / "dataset.tmp").is_dir()  # the build is under way
        os.kill(os.getpid(), signal.SIGTERM)
        pytest.fail("SIGTERM should have interrupted the build")

    monkeypatch.setattr(pipeline_module, "process_chunk", chunk_then_sigterm)
    monkeypatch.setattr(build_module.os, "cpu_count", lambda: 1)  # decode in-process
    before = signal.getsignal(signal.SIGTERM)
    assert run.main([str(job)]) == 128 + signal.SIGTERM  # the exit code of every aborted job
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back
    assert statuses(job)[-1] == ("aborted", None)
    assert not (job / "dataset.tmp").exists() and not (job / "dataset").exists()
