"""Benchmark the first hour's waits (issue 31, points 1 and 3) beside a bare `import torch`,
measured side by side on the same machine at the same moment.

  import torch        `python -c "import torch"`: the yardstick
  torch choice        scripts/install-torch in a fresh virtual environment, pip's configuration
                      set aside so the CPU index is really tried: where it cannot be reached (as
                      here) this is the time the fallback to the default wheel costs
  train --submit      one `trainyard train --submit` of a network no check has seen, on a fresh
                      home: first with no server (the command starts a checker: a torch start),
                      then with a running `trainyard serve` whose checker is warm
  import, Create      the cold paths of point 3 (bench/app/first_hour_cold.py says what each row is)

Each row is the best of --rounds runs, wall and CPU seconds, each beside the bare `import torch`
started the same way (a command beside `python -c "import torch"`; a request's server CPU too),
with the load average. ``--only cold`` runs the point 3 rows alone.

    python bench/app/first_hour.py [--rounds 3] [--only cold]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests/ helpers from a checkout
from bench.app import first_hour_cold as cold  # noqa: E402

from tests.conftest import make_image_folder  # noqa: E402
from tests.live_server import free_port  # noqa: E402

PY = sys.executable


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - start, done


def bare_torch() -> tuple[float, float]:
    seconds, cpu, _ = cold.timed_cpu([PY, "-c", "import torch"])
    return seconds, cpu


def torch_choice(tmp: Path) -> tuple[float, str]:
    venv = tmp / f"venv-{time.monotonic_ns()}"
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)  # a fresh clone's `make` does this
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    seconds, done = timed([str(ROOT / "scripts/install-torch"), str(venv / "bin/pip")], env)
    said = [line for line in done.stdout.splitlines() if line.startswith("trainyard install:")]
    return seconds, said[-1] if said else done.stdout[-200:]


def cli_env(home: Path, port: int) -> dict:
    return os.environ | {"TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(home.parent),
                         "TRAINYARD_PORT": str(port), "TRAINYARD_AUTH_TOKEN": "",
                         "PYTHONPATH": str(ROOT / "src")}


def fresh_home(tmp: Path, port: int) -> tuple[Path, str]:
    home = Path(tempfile.mkdtemp(dir=tmp)) / "home"
    images = make_image_folder(home.parent / "images", {"a": 8, "b": 8})
    out = subprocess.run([PY, "-m", "trainyard.cli.main", "dataset", "create", "--name", "d", "--train-folder",
                          str(images), "--size", "64x64", "--json"], capture_output=True, text=True,
                         env=cli_env(home, port), check=True).stdout
    return home, json.loads(out)["id"]


def submit(home: Path, dataset: str, network: str, port: int) -> float:
    seconds, done = timed([PY, "-m", "trainyard.cli.main", "train", "--dataset", dataset, "--network", network,
                           "--epochs", "1", "--submit"], cli_env(home, port))
    assert done.returncode == 0, done.stderr[-500:]
    return seconds


def submit_with_server(tmp: Path, network: str) -> float:
    port = free_port()
    home, dataset = fresh_home(tmp, port)
    with cold.running_server(cli_env(home, port), home, port):
        return submit(home, dataset, network, port)


def cold_rows(tmp: Path, archives: dict[str, Path]) -> dict[str, tuple[float, float]]:
    """One round of point 3's rows: {row: (wall s, CPU s)}, each first thing on a fresh home."""
    rows = {}
    port = free_port()
    home, dataset = fresh_home(tmp, port)
    env = cli_env(home, port)
    rows["import, no server"] = cold.cli_import(archives["standard"], env)
    home, dataset = fresh_home(tmp, port)
    rows["import custom, no server"] = cold.cli_import(archives["custom"], cli_env(home, port))
    home, dataset = fresh_home(tmp, port)
    env = cli_env(home, port)
    with cold.running_server(env, home, port) as (url, token, proc):
        wall, cpu, _ = cold.timed_request(proc, lambda: cold.post_file(url + "/api/models/import", token,
                                                                       archives["standard"]))
        rows["browser import, first"] = (wall, cpu)
        rows["import custom, server running"] = cold.cli_import(archives["custom"], env)
    home, dataset = fresh_home(tmp, port)
    env = cli_env(home, port)
    previous = json.loads(cold.cli_import(archives["standard"], env, output=True))["id"]
    with cold.running_server(env, home, port) as (url, token, proc):
        wall, cpu, _ = cold.timed_request(proc, lambda: cold.post_json(url + "/api/models", token, {
            "name": "tuned", "datasets": [dataset], "pretrained": previous, "settings": {"epochs": 1}}))
        rows["Create from previous, first"] = (wall, cpu)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["cold"], default=None)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {"import torch": []}
    said = ""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        archives = cold.make_archives(tmp, ROOT)
        for _ in range(args.rounds):
            network = "lenet"  # unseen each time: every round has a fresh home, so no cached check
            rows["import torch"].append(bare_torch())
            if args.only is None:
                seconds, said = torch_choice(tmp)
                rows.setdefault("torch choice (fallback)", []).append((seconds, float("nan")))
                port = free_port()
                home, dataset = fresh_home(tmp, port)
                rows.setdefault("train --submit, no server", []).append((submit(home, dataset, network, port),
                                                                          float("nan")))
                rows.setdefault("train --submit, server running", []).append(
                    (submit_with_server(tmp, network), float("nan")))
            for name, value in cold_rows(tmp, archives).items():
                rows.setdefault(name, []).append(value)
            rows["import torch"].append(bare_torch())
    report(rows, said)


def report(rows: dict[str, list[tuple[float, float]]], said: str) -> None:
    torch_wall = min(wall for wall, _ in rows["import torch"])
    torch_cpu = min(cpu for _, cpu in rows["import torch"])
    print(f"load average {os.getloadavg()[0]:.1f}" + (f"; install-torch said: {said}" if said else ""))
    print(f"{'row':34} {'wall s':>7} {'x torch':>8} {'CPU s':>7} {'x torch':>8}   all wall")
    for name, values in rows.items():
        wall = min(w for w, _ in values)
        cpu = min(c for _, c in values)
        print(f"{name:34} {wall:7.2f} {wall / torch_wall:8.2f} {cpu:7.2f} {cpu / torch_cpu:8.2f}   "
              + " ".join(f"{w:.2f}" for w, _ in values))


if __name__ == "__main__":
    main()
