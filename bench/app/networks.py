"""Benchmark the networks list and Visualize: the first answer against a warm cache.

``GET /api/networks`` counts every standard network's parameters and ``POST /api/networks/inspect``
(the "Visualize" button) builds a network and runs it once in a child process; both are cached
per network (networks/cache.py: in memory and under TRAINYARD_HOME/cache/networks). This starts
a real ``trainyard serve`` over a temporary home, three times:

1. fresh home, fresh server: the first networks list and the first Visualize of each network
   (cold: nothing cached), then each again --rounds times (warm: the memory cache);
2. the same home, a restarted server: the first answers come from the disk cache.

Each figure is printed in seconds and as a ratio to the warm median (cold / warm).

    python bench/app/networks.py [--rounds 10] [--networks lenet,alexnet,googlenet,resnet18]

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

``--checks`` measures, in this one process, what a check costs once nothing is cached: the same
check (build, forward passes, inspection) run in this process with torch already imported (the
baseline), in a child forked from the warm checker (networks/isolated.py, sandboxed), and in a
freshly spawned sandboxed interpreter (what every check cost before the warm checker):

    python bench/app/networks.py --checks [--rounds 5] [--networks lenet,resnet18]

Measured 2026-12-01, --rounds 5, the same shared 2-core machine (load average about 25, so
wall times are mostly waiting for a core: the in-process LeNet check is 0.19 CPU-seconds):

    check             in-process  warm child  warm/in   spawned  spawn/warm  CPU in-process
    lenet                 2.204s      2.137s     1.0x    17.05s        8.0x          0.188s
    resnet18             12.126s     13.011s     1.1x    41.62s        3.2x          1.780s
    custom lenet          1.843s      1.235s     0.7x    12.08s        9.8x          0.201s

Again at load average about 8 (09:21 UTC):

    check             in-process  warm child  warm/in   spawned  spawn/warm  CPU in-process
    lenet                 0.312s      0.891s     2.9x     8.03s        9.0x          0.127s
    resnet18              2.813s      3.780s     1.3x     7.79s        2.1x          1.127s
    custom lenet          0.203s      0.373s     1.8x     5.55s       14.9x          0.131s

A warm sandboxed check answers in under a second for LeNet and a custom LeNet: a few tenths of
a second over the same check in-process (the fork, the confinement, torch's thread pool made
anew in the child), where a spawned interpreter pays for importing torch every time.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ helpers from a checkout
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


CUSTOM_LENET = """
from torch import nn


def build(num_classes, in_channels, image_size):
    return nn.Sequential(
        nn.Conv2d(in_channels, 20, 5), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
        nn.Flatten(), nn.LazyLinear(500), nn.ReLU(), nn.Linear(500, num_classes))
"""


def check_requests(networks: list[str]) -> dict[str, dict]:
    base = {"num_classes": 10, "in_channels": 1, "image_size": 28, "input_size": None, "filename": "network.py"}
    requests = {name: {**base, "network": name, "source": None} for name in networks}
    requests["custom lenet"] = {**base, "network": None, "source": CUSTOM_LENET}
    return requests


def seconds(call) -> tuple[float, float]:
    """(wall, this process's CPU) seconds of one call; a failed check is reported."""
    wall, cpu = time.perf_counter(), time.process_time()
    answer = call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not answer.get("ok"):
        print(f"  not ok after {wall:.1f} s: {answer.get('error')}", file=sys.stderr)
    return wall, cpu


def measure_checks(networks: list[str], rounds: int) -> None:
    """The warm check against the same check in this process, and against a cold spawn."""
    from trainyard.networks.check import run_check
    from trainyard.networks.isolated import CHECKER, check_network_isolated
    from trainyard.sandbox.childproc import Child, default_policy

    def isolated(request: dict) -> dict:
        return check_network_isolated(request["source"], 10, 1, 28, network=request["network"])

    def spawned(request: dict) -> dict:
        child = Child("trainyard.networks.isolated:handle", default_policy(), what="the check",
                      start_timeout=600, zygote=None)
        try:
            return child.ask(request, 600)
        finally:
            child.stop()

    CHECKER.warm_up()
    print(f"{'check':16} {'in-process':>11} {'warm child':>11} {'warm/in':>8} {'spawned':>9} {'spawn/warm':>11} "
          f"{'CPU in-process':>15}")
    for what, request in check_requests(networks).items():
        run_check(request)  # the first build in this process pays for lazy imports: not counted
        inside = [seconds(lambda request=request: run_check(request)) for _ in range(rounds)]
        isolated(request)  # the first fork may import what the warm checker did not
        warm = statistics.median(seconds(lambda request=request: isolated(request))[0] for _ in range(rounds))
        cold = seconds(lambda request=request: spawned(request))[0]
        wall = statistics.median(w for w, _ in inside)
        cpu = statistics.median(c for _, c in inside)
        print(f"{what:16} {wall:10.3f}s {warm:10.3f}s {warm / wall:7.1f}x {cold:8.2f}s {cold / warm:10.1f}x "
              f"{cpu:14.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--networks", default="lenet,alexnet,googlenet,resnet18")
    parser.add_argument("--checks", action="store_true", help="the warm check against an in-process build")
    args = parser.parse_args()
    networks = args.networks.split(",")
    if args.checks:
        measure_checks(networks, args.rounds)
        return
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
