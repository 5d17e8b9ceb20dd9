"""Benchmark the CLI's answers that need no computation against `python -c "import typer, rich"`.

Issue 22: `trainyard --help`, a command's --help and every refusal that needs no computation
should take at most 2.5x the time Python takes to import typer and rich. Each row runs the
command and the baseline alternately, each in a fresh process in its own session, --rounds
times, and prints the best wall time and the CPU-seconds (user + system, of that process) of
each side, and their ratios. On a loaded machine the CPU ratio is the steadier figure.

Rows: the top-level --help, three commands' --help, a mistyped command, a bad option value, an
out-of-range one (a ranged option, converted without pydantic: cli/plain_params.py), a
mistyped standard and a mistyped timm network (timm's names cached: the first row of the run
writes the cache if it is missing), an unknown job id (`jobs list` first creates the SQLite store,
which cli/known_jobs.py reads with sqlite3 instead of opening it with SQLAlchemy), and `weights list`
(a listing, not a refusal: for reference).
Run it against another checkout with PYTHONPATH=OTHER/src to see the figures before.

    python bench/app/cli.py [--rounds 5] [--only 'unknown job']
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

PY = sys.executable
BASELINE = [PY, "-c", "import typer, rich"]
ROWS = [
    ("trainyard --help", ["--help"]),
    ("trainyard train --help", ["train", "--help"]),
    ("trainyard dataset create --help", ["dataset", "create", "--help"]),
    ("trainyard weights list --help", ["weights", "list", "--help"]),
    ("mistyped command (trian)", ["trian"]),
    ("bad value (--channels three)", ["dataset", "create", "--name", "x", "--channels", "three"]),
    ("out of range (classify --top 0)", ["classify", "m", "/etc/hostname", "--top", "0"]),
    ("mistyped network (resnt18)", ["train", "--dataset", "x", "--network", "resnt18"]),
    ("mistyped timm name (timm:resnet10tt)", ["train", "--dataset", "x", "--network", "timm:resnet10tt"]),
    ("unknown job id (jobs show; a store exists)", ["jobs", "show", "20261130-000000-abcd"]),
    ("unknown job id (jobs resume)", ["jobs", "resume", "20261130-000000-abcd"]),
    ("unknown job id (evaluate)", ["evaluate", "20261130-000000-abcd"]),
    ("unknown job id (classify)", ["classify", "20261130-000000-abcd", "/etc/hostname"]),
    ("weights list (1,773 rows; catalogue cached)", ["weights", "list"]),
]


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process in its own session."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(w for w, _ in runs), min(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="the rows whose label contains this text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "TRAINYARD_HOME": home, "COLUMNS": "80"}
        # timm's names and the weights catalogue cached, and the job store created
        for warm in (ROWS[7][1], ROWS[-1][1], ["jobs", "list"]):
            subprocess.run([PY, "-m", "trainyard.cli.main", *warm], env=env, capture_output=True)
        print(f"{'what':<46} {'wall s':>7} {'base':>6} {'ratio':>6}   {'CPU s':>6} {'base':>6} {'ratio':>6}  aim")
        for what, argv in [row for row in ROWS if args.only in row[0]]:
            ours, base = [], []
            for _ in range(args.rounds):
                ours.append(timed([PY, "-m", "trainyard.cli.main", *argv], env))
                base.append(timed(BASELINE, env))
            (wall, cpu), (base_wall, base_cpu) = best(ours), best(base)
            print(f"{what:<46} {wall:7.3f} {base_wall:6.3f} {wall / base_wall:6.2f}   {cpu:6.3f} {base_cpu:6.3f} "
                  f"{cpu / base_cpu:6.2f}  <= 2.5")
    print(f"(best of {args.rounds}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())})")


if __name__ == "__main__":
    main()
