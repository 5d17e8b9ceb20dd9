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
    python bench/networks.py --checks [--rounds 10]

``--checks`` measures, in this process, a custom network with a SyntaxError checked as every
check ran before (a child process) and as now (ast, source_check.py), against compile() here;
and creating a 2-job sweep of one network (one check) against one job, each with a cold check,
and one job whose check is cached. Measured 2026-12-01 (--rounds 10, 2 cores shared by 8
builds, load average 24):

    what                                        wall       CPU  baseline     ratio
    syntax error: child check (before)      24.8936s   3.7710s   0.0000s  1.18e+06x
    syntax error: ast pre-check (after)      0.0001s   0.0001s   0.0000s      3.54x
    create 2-job sweep, one network         23.0576s   3.4954s  20.7572s      1.11x
    create 1 job, check cached               0.0891s   0.0136s  20.7572s    0.0043x
    syntax error, before / after: about 2.5e+05x (from the rounded figures above)

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
import resource
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


SYNTAX_ERROR = "from torch import nn\n\ndef build(num_classes, in_channels, image_size)\n    return nn.Linear(1, 1)\n"


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def clocked(call) -> tuple[float, float]:
    """(wall s, CPU s) of one call."""
    cpu, start = cpu_seconds(), time.perf_counter()
    call()
    return time.perf_counter() - start, cpu_seconds() - cpu


def bench_checks(rounds: int) -> None:
    """A SyntaxError's check before (a child process) and after (ast, in this process) against
    compile() in this process; creating a 2-job sweep of one network against one job."""
    from fastapi.testclient import TestClient

    from trainyard.jobs.resources import Pools
    from trainyard.networks.cache import NetworkCache
    from trainyard.networks.isolated import check_network_isolated
    from trainyard.settings import Settings
    from trainyard.web.app import create_app

    rows = []
    # Each round a new text (a comment), so no answer comes from the cache.
    source = lambda i: SYNTAX_ERROR + f"# round {i}\n"  # noqa: E731
    before = [clocked(lambda i=i: check_network_isolated(source(i), 10, 3, 32)) for i in range(min(rounds, 3))]
    after = [clocked(lambda i=i: NetworkCache(None).check(source=source(i), num_classes=10, in_channels=3,
                                                          image_size=32)) for i in range(rounds)]
    baseline = [clocked(lambda i=i: _compiles(source(i))) for i in range(rounds)]
    rows.append(("syntax error: child check (before)", before, baseline))
    rows.append(("syntax error: ast pre-check (after)", after, baseline))
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-") as tmp:
        settings = Settings(home=Path(tmp) / "home", data_roots=[Path(tmp) / "data"],
                            allowed_hosts=["testserver"])  # TestClient's Host
        app = create_app(settings, pools=Pools(1, 1, []), run_scheduler=False)
        with TestClient(app) as client:
            def create(side: int, lrs: list[float]):
                # A geometry of its own: the network check is cold (nothing cached) each time.
                dataset = app.state.ctx.manager.create("dataset", f"d{side}", {"name": f"d{side}"},
                                                       needs={"pool": "dataset"})
                app.state.ctx.store.update_job(dataset.id, status="done", summary={
                    "classes": ["a", "b"], "width": side, "height": side, "channels": 1})
                body = {"name": "m", "datasets": [dataset.id], "networks": ["lenet"], "base_lrs": lrs}
                return lambda: _created(client.post("/api/models", json=body))

            one = [clocked(create(28 + i, [0.01])) for i in range(3)]
            sweep = [clocked(create(40 + i, [0.01, 0.02])) for i in range(3)]
            again = create(28, [0.01])
            cached = [clocked(again) for _ in range(rounds)]
    rows.append(("create 2-job sweep, one network", sweep, one))
    rows.append(("create 1 job, check cached", cached, one))
    print(f"load average {os.getloadavg()[0]:.1f}; medians; ratio = wall / the baseline's wall")
    print(f"{'what':38} {'wall':>9} {'CPU':>9} {'baseline':>9} {'ratio':>9}")
    for what, runs, base in rows:
        wall, cpu = (statistics.median(r[i] for r in runs) for i in (0, 1))
        base_wall = statistics.median(r[0] for r in base)
        print(f"{what:38} {wall:8.4f}s {cpu:8.4f}s {base_wall:8.4f}s {wall / base_wall:9.3g}x")
    print("(baselines: compile() in this process for the syntax error; one job, cold check, for create)")
    medians = {what: statistics.median(r[0] for r in runs) for what, runs, _ in rows}
    print(f"syntax error, before / after: {medians[rows[0][0]] / medians[rows[1][0]]:.3g}x")


def _created(response) -> None:
    if response.status_code != 201:
        raise SystemExit(f"creating failed: {response.status_code} {response.text}")


def _compiles(text: str) -> bool:
    try:
        compile(text, "network.py", "exec")
    except SyntaxError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--networks", default="lenet,alexnet,googlenet,resnet18")
    parser.add_argument("--checks", action="store_true",
                        help="measure the syntax-error pre-check and sweep creation instead (in process)")
    args = parser.parse_args()
    if args.checks:
        bench_checks(args.rounds)
        return
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
