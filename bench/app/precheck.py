"""Benchmark the checks that need no checker: a custom network with a SyntaxError, and creating
a sweep whose runs share one network.

    python bench/app/precheck.py [--rounds 10]

This measures, in this process, a custom network with a SyntaxError checked as every
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
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from the repository

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

    from trainyard.jobs.scheduling.resources import Pools
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
        with TestClient(app, headers={"Authorization": f"Bearer {app.state.auth_token}"}) as client:
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
    bench_checks(parser.parse_args().rounds)


if __name__ == "__main__":
    main()
