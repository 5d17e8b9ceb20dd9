"""One prepared GPU check: everything trainyard's GPU path must do, in one call of at most 9 minutes.

A session lent a GPU machine (PyTorch there, none of trainyard's other dependencies, no package
index) runs this first thing; README's "One GPU check" gives the whole call. Each stage runs as
a subprocess in a session of its own with a time budget, under one global deadline: a stage that
overruns is killed (its whole process group) and marked "cut", the ones that no longer fit are
"skipped: out of time", and without CUDA every GPU stage is "skipped: no CUDA". The table prints
whatever happens, also when this script itself is stopped (SIGTERM, Ctrl-C), and goes with the
stages' logs to ``--out`` (default ``$OUT``): table.txt, results.json, stages.log.

Stages: environment (torch, CUDA, NCCL, capability, driver), NVML through trainyard's own
inventory and monitor, ``pytest -m gpu``, bench/cluster/scaling.py for GoogLeNet at batch 128 (rows "1"
and "1 (DDP)", 2 and 4 where present), AMP on/off (bench/training/train.py), export and CPU resume of a
GPU checkpoint with GPU-against-CPU logits, and fp32/bf16/fp16/compile runs (bench/gpu/gpu_stages.py).

    python bench/gpu_check.py [--budget 530] [--out DIR] [--only environment,nvml]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
STAGES_PY = str(REPO / "bench" / "gpu" / "gpu_stages.py")
GPU_TESTS = ["tests/training", "tests/jobs/test_gpu_jobs.py", "tests/inference/test_gpu_inference.py"]
MIN_STAGE_S = 10.0  # a stage given less than this could not even import torch: skipped instead
RESERVE_S = 5.0  # kept back from the deadline for the table and the files


@dataclass
class Stage:
    name: str
    budget_s: float
    command: list[str]
    needs_cuda: bool = True
    tail: int = 1  # summary: its RESULT: lines, else this many last lines of its output


@dataclass
class Row:
    stage: str
    status: str  # ok, FAILED (exit N), cut after N s, skipped: no CUDA, skipped: out of time
    seconds: float = 0.0
    summary: list[str] = field(default_factory=list)


def stages() -> list[Stage]:
    scaling = [PY, "bench/cluster/scaling.py", "--networks", "googlenet", "--batch", "128", "--steps", "30",
               "--warmup", "10", "--images", "2048"]
    amp = [PY, "bench/training/train.py", "--amp-only", "--amp-network", "googlenet", "--rounds", "1",
           "--amp-images", "1024"]
    pytest = [PY, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", *GPU_TESTS]
    return [
        Stage("environment", 30, [PY, STAGES_PY, "environment"], needs_cuda=False),
        Stage("nvml", 20, [PY, STAGES_PY, "nvml"]),
        Stage("pytest -m gpu", 170, pytest),
        Stage("scaling googlenet b128", 100, scaling, tail=6),
        Stage("amp on/off googlenet", 50, amp, tail=4),
        Stage("export + cpu resume", 60, [PY, STAGES_PY, "export-resume"]),
        Stage("fp32/bf16/fp16/compile", 110, [PY, STAGES_PY, "precision"]),
    ]


class Runner:
    """Runs stages in order under one deadline; ``rows`` holds what is known at any moment."""

    def __init__(self, stages: list[Stage], budget_s: float, log: Path, cuda: bool, env: dict[str, str],
                 clock: Callable[[], float] = time.monotonic):
        self.stages, self.log, self.cuda, self.env, self.clock = stages, log, cuda, env, clock
        self.deadline = clock() + budget_s
        self.rows: list[Row] = []

    def run(self) -> list[Row]:
        for stage in self.stages:
            self.rows.append(self.run_one(stage))
        return self.rows

    def run_one(self, stage: Stage) -> Row:
        if stage.needs_cuda and not self.cuda:
            return Row(stage.name, "skipped: no CUDA")
        limit = min(stage.budget_s, self.deadline - self.clock() - RESERVE_S)
        if limit < min(MIN_STAGE_S, stage.budget_s):
            return Row(stage.name, "skipped: out of time")
        started = self.clock()
        with open(self.log, "a") as log:
            log.write(f"\n===== {stage.name}: {' '.join(stage.command)} (budget {limit:.0f} s)\n")
            log.flush()
            offset = log.tell()
            proc = subprocess.Popen(stage.command, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=limit)
                status = "ok" if code == 0 else f"FAILED (exit {code})"
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                status = f"cut after {limit:.0f} s"
            except BaseException:  # this script stopped: take the stage's processes with it
                _kill_group(proc)
                raise
        return Row(stage.name, status, round(self.clock() - started, 1), _summary(self.log, offset, stage.tail))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _summary(log: Path, offset: int, tail: int) -> list[str]:
    with open(log, errors="replace") as f:
        f.seek(offset)
        lines = [line.rstrip() for line in f if line.strip()]
    results = [line.removeprefix("RESULT: ") for line in lines if line.startswith("RESULT: ")]
    return results or lines[-tail:]


def table(rows: list[Row], pending: list[str]) -> str:
    """The stages as a text table: status and seconds, then each stage's summary lines."""
    rows = rows + [Row(name, "not run (check stopped)") for name in pending]
    width = max(len(r.stage) for r in rows)
    out = [f"{'stage'.ljust(width)}  {'status':24s}  seconds  summary"]
    for row in rows:
        first = row.summary[0] if row.summary else ""
        out.append(f"{row.stage.ljust(width)}  {row.status:24s}  {row.seconds:7.1f}  {first}")
        out.extend(f"{''.ljust(width)}  {'':24s}  {'':7s}  {line}" for line in row.summary[1:])
    return "\n".join(out)


def install_wheels(wheels: Path, target: Path, env: dict[str, str]) -> str:
    """Install the carried wheels (bench/gpu/gpu_wheels.py) under ``target``; what happened, in words."""
    found = sorted(wheels.glob("*.whl"))
    if not found:
        return f"no wheels in {wheels}: using the installed packages"
    code = subprocess.call([PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--no-cache-dir", "--upgrade", "--target", str(target), *map(str, found)])
    if code:
        return f"pip install of {len(found)} wheels FAILED (exit {code})"
    env["PYTHONPATH"] = os.pathsep.join([str(target), env["PYTHONPATH"]])
    return f"installed {len(found)} wheels under {target}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=530, help="seconds for every stage together")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or REPO / "bench" / "out" / "gpu"))
    parser.add_argument("--only", default="", help="comma-separated stage names (default: all)")
    parser.add_argument("--wheels", type=Path, default=REPO / ".gpu-wheels")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "stages.log"
    log.write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), "PYTHONUNBUFFERED": "1"}
    print(install_wheels(args.wheels, Path("/tmp/trainyard-site"), env), flush=True)
    chosen = [s for s in stages() if not args.only or s.name.split()[0] in args.only.split(",")]
    runner = Runner(chosen, args.budget, log, cuda=_cuda_present(env), env=env)
    signal.signal(signal.SIGTERM, _stop)
    try:
        runner.run()
    except KeyboardInterrupt:
        pass
    finally:
        pending = [s.name for s in chosen[len(runner.rows):]]
        text = table(runner.rows, pending)
        print(text, flush=True)
        (args.out / "table.txt").write_text(text + "\n")
        (args.out / "results.json").write_text(json.dumps([asdict(r) for r in runner.rows], indent=2))
    return 0 if all(r.status == "ok" or r.status.startswith("skipped") for r in runner.rows) else 1


def _stop(signum, frame):
    raise KeyboardInterrupt


def _cuda_present(env: dict[str, str]) -> bool:
    """Whether torch sees a GPU, asked in a child (this process never imports torch)."""
    probe = subprocess.run([PY, "-c", "import torch; print(torch.cuda.device_count())"], env=env,
                           capture_output=True, text=True, timeout=120)
    return probe.returncode == 0 and probe.stdout.strip() not in ("", "0")


if __name__ == "__main__":
    sys.exit(main())
