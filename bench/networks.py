"""Benchmark the networks list and Visualize: the first answer against a warm cache.

``GET /api/networks`` counts every standard network's parameters and ``POST /api/networks/inspect``
(the "Visualize" button) builds a network and runs it once in a child process; both are cached
per network (networks/cache.py: in memory and under TRAINYARD_HOME/cache/networks). This starts
a real ``trainyard serve`` over a temporary home, three times:

1. fresh home, fresh server: the first networks list and the first Visualize of each network
   (cold: nothing cached), then each again --rounds times (warm: the memory cache);
2. the same home, a restarted server: the first answers come from the disk cache.

Each figure is printed in seconds and as a ratio to the warm median (cold / warm).

    python bench/networks.py [--rounds 10] [--networks lenet,alexnet,googlenet,resnet18]

Measured once (2026-11-30, --rounds 5, a 2-core machine shared by several builds, load average
about 22, so the cold figures are several times what an idle machine shows):

    what               first, cold   first, restarted   warm median   cold/warm   restart/warm
    networks list          39.05 s            0.029 s      0.0190 s       2052x          1.5x
    visualize lenet        18.68 s            0.007 s      0.0074 s       2509x          0.9x
    visualize alexnet      33.31 s            0.006 s      0.0026 s      13007x          2.5x
    visualize googlenet    55.87 s            0.044 s      0.0158 s       3534x          2.8x
    visualize resnet18     33.72 s            0.054 s      0.0027 s      12345x         19.9x

The cold cost is importing torch and torchvision and building the network, once per network
and home; every later answer, also after a restart, takes well under 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ helpers from a checkout
from tests.live_server import free_port, wait_until_up  # noqa: E402


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(home / "data"),
           "TRAINYARD_AUTH_TOKEN": ""}
    proc = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", "serve", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url + "/api/system", lambda: proc.poll() is None, 120)
    except RuntimeError:
        proc.kill()
        raise
    return proc, url


def timed(call) -> float:
    """Seconds one call took; a check that failed (timed out on a busy machine) is reported."""
    start = time.perf_counter()
    response = call()
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    if response.request.method == "POST" and not response.json()["ok"]:
        print(f"  not ok after {elapsed:.1f} s: {response.json()['error']}", file=sys.stderr)
    return elapsed


def measure(url: str, networks: list[str], rounds: int) -> dict[str, dict]:
    """{what: {"first": s, "warm": median s}}: the first call, then `rounds` more."""
    client = httpx.Client(base_url=url, timeout=300)
    calls = {"networks list": lambda: client.get("/api/networks")}
    for name in networks:
        body = {"network": name, "num_classes": 10, "in_channels": 3}
        calls[f"visualize {name}"] = lambda body=body: client.post("/api/networks/inspect", json=body)
    out = {}
    for what, call in calls.items():
        first = timed(call)
        warm = statistics.median(timed(call) for _ in range(rounds))
        out[what] = {"first": first, "warm": warm}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--networks", default="lenet,alexnet,googlenet,resnet18")
    args = parser.parse_args()
    networks = args.networks.split(",")
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-") as tmp:
        home = Path(tmp) / "home"
        runs = {}
        for label in ("cold (fresh home)", "restarted (disk cache)"):
            proc, url = start_server(home)
            try:
                runs[label] = measure(url, networks, args.rounds)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"{'':24} {'first, cold':>12} {'first, restarted':>17} {'warm median':>12} "
          f"{'cold/warm':>10} {'restart/warm':>13}")
    cold, restarted = runs["cold (fresh home)"], runs["restarted (disk cache)"]
    for what in cold:
        warm = cold[what]["warm"]
        print(f"{what:24} {cold[what]['first']:11.3f}s {restarted[what]['first']:16.3f}s {warm:11.4f}s "
              f"{cold[what]['first'] / warm:9.0f}x {restarted[what]['first'] / warm:12.1f}x")
    print(json.dumps(runs))


if __name__ == "__main__":
    main()
