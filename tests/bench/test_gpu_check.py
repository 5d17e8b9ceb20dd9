"""bench/gpu_check.py's stage runner: budgets, the global deadline, a cut stage, no CUDA, and a
table that prints whatever happened. Runs without CUDA, as on CI: the GPU stages say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
from bench.gpu_check import Row, Runner, Stage, table

from tests.conftest import wait_for

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]


def stage(name, code, budget=30.0, needs_cuda=False):
    return Stage(name, budget, [PY, "-c", code], needs_cuda=needs_cuda)


class Clock:
    """Time that moves only when told (the stages still run for real, briefly)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_stages_run_in_order_with_their_results_and_failures(tmp_path):
    runner = Runner([stage("first", "print('noise'); print('RESULT: 42 images/s')"),
                     stage("second", "import sys; print('boom'); sys.exit(3)"),
                     stage("gpu", "print('never')", needs_cuda=True)],
                    budget_s=100, log=tmp_path / "log", cuda=False, env={})
    rows = runner.run()
    assert [(r.stage, r.status) for r in rows] == [("first", "ok"), ("second", "FAILED (exit 3)"),
                                                  ("gpu", "skipped: no CUDA")]
    assert rows[0].summary == ["42 images/s"] and rows[1].summary == ["boom"]
    assert "never" not in (tmp_path / "log").read_text()


def test_a_stage_past_its_budget_is_cut_and_its_processes_killed(tmp_path):
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(p.pid, flush=True); time.sleep(60)")
    row = Runner([stage("slow", code, budget=8)], budget_s=100, log=tmp_path / "log", cuda=True, env={}).run()[0]
    assert row.status == "cut after 8 s" and row.seconds < 40  # 8 s: time to start both, on a busy CPU
    child = psutil.Process(int(row.summary[0]))

    def dead() -> bool:  # a zombie is dead too; SIGKILL lands a moment later on a busy CPU
        try:
            return child.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    assert wait_for(dead, 30), "the stage's own child outlived the cut"  # it went with its process group


def test_the_global_deadline_skips_what_no_longer_fits(tmp_path):
    clock = Clock()
    runner = Runner([stage("a", "print(1)", budget=50), stage("b", "print(2)", budget=50)],
                    budget_s=60, log=tmp_path / "log", cuda=True, env={}, clock=clock)
    first = runner.run_one(runner.stages[0])
    clock.now = 48  # stage a took (on this clock) most of the minute
    second = runner.run_one(runner.stages[1])
    assert first.status == "ok" and second.status == "skipped: out of time"


def test_the_table_lists_every_stage_also_those_never_reached():
    text = table([Row("environment", "ok", 1.5, ["torch 2.11", "no CUDA"])], pending=["pytest -m gpu"])
    lines = text.splitlines()
    assert lines[0].split() == ["stage", "status", "seconds", "summary"]
    assert "environment" in lines[1] and "torch 2.11" in lines[1] and lines[2].strip() == "no CUDA"
    assert "pytest -m gpu" in lines[3] and "not run (check stopped)" in lines[3]


def test_without_cuda_the_whole_check_prints_its_table_quickly(tmp_path):
    out = subprocess.run([PY, "bench/gpu_check.py", "--out", str(tmp_path), "--wheels", str(tmp_path / "none"),
                          "--only", "environment,nvml,pytest,scaling"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("nvml", "pytest -m gpu", "scaling googlenet b128"):
        assert any(line.startswith(name) and "skipped: no CUDA" in line for line in out.stdout.splitlines())
    assert "torch " in out.stdout
    assert (tmp_path / "table.txt").read_text().strip() == out.stdout.split("\n", 1)[1].strip()
    assert {p.name for p in tmp_path.iterdir()} == {"table.txt", "results.json", "stages.log"}
