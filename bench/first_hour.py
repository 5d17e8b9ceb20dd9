"""Benchmark the first hour's waits (issue 31, points 1 and 3) beside a bare `import torch`,
measured side by side on the same machine at the same moment.

  import torch        `python -c "import torch"`: the yardstick
  torch choice        scripts/install-torch in a fresh virtual environment, pip's configuration
                      set aside so the CPU index is really tried: where it cannot be reached (as
                      here) this is the time the fallback to the default wheel costs
  train --submit      one `trainyard train --submit` of a network no check has seen, on a fresh
                      home: first with no server (the command starts a checker: a torch start),
                      then with a running `trainyard serve` whose checker is warm

Each row is the best of --rounds runs, with the load average beside it.

    python bench/first_hour.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ helpers from a checkout
from tests.conftest import make_image_folder  # noqa: E402
from tests.live_server import free_port, wait_until_up  # noqa: E402

PY = sys.executable


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - start, done


def bare_torch() -> float:
    return timed([PY, "-c", "import torch"])[0]


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
    server = subprocess.Popen([PY, "-m", "trainyard.cli.main", "serve", "--port", str(port)],
                              env=cli_env(home, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url + "/api/system", lambda: server.poll() is None)
        warm = urllib.request.Request(url + "/api/networks/inspect", method="POST", data=json.dumps(
            {"network": "lenet", "num_classes": 5, "in_channels": 1, "image_size": 32}).encode(),
            headers={"Content-Type": "application/json"})
        urllib.request.urlopen(warm, timeout=600).read()  # the checker is warm, as after a start-up
        return submit(home, dataset, network, port)
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {"import torch": [], "torch choice (fallback)": [],
                                    "train --submit, no server": [], "train --submit, server running": []}
    said = ""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for _ in range(args.rounds):
            network = "lenet"  # unseen each time: every round has a fresh home, so no cached check
            rows["import torch"].append(bare_torch())
            seconds, said = torch_choice(tmp)
            rows["torch choice (fallback)"].append(seconds)
            port = free_port()
            home, dataset = fresh_home(tmp, port)
            rows["train --submit, no server"].append(submit(home, dataset, network, port))
            rows["train --submit, server running"].append(submit_with_server(tmp, network))
            rows["import torch"].append(bare_torch())
    torch_s = min(rows["import torch"])
    print(f"load average {os.getloadavg()[0]:.1f}; install-torch said: {said}")
    print(f"{'row':34} {'best s':>8} {'x import torch':>15}   all")
    for name, values in rows.items():
        print(f"{name:34} {min(values):8.2f} {min(values) / torch_s:15.2f}   "
              + " ".join(f"{v:.2f}" for v in values))


if __name__ == "__main__":
    main()
