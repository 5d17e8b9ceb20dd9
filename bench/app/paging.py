"""Benchmark the home page's refresh at 1,000 and 10,000 jobs: server time and bytes, as ratios.

Every 2 s the page asks /partials/jobs for its tables with ``since``, the version of what it
shows. Two cases are timed (median of ``--rounds`` requests, in-process through the ASGI stack,
which is the server's whole share of a request):

- idle: nothing changed, the answer is an empty 204 (the common case);
- redraw: a job changed, the answer is the first page of each table (50 rows each).

Aim: each 10,000-job figure within 1.2x of the 1,000-job one (flat in the number of jobs).

    python bench/app/paging.py                  # 1,000 and 10,000 jobs
    python bench/app/paging.py --counts 1000 20000 --rounds 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from trainyard.core.status import Status
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.store import Job
from trainyard.settings import Settings
from trainyard.web.app import create_app

STATUSES = [Status.DONE, Status.DONE, Status.DONE, Status.FAILED, Status.ABORTED, Status.RUNNING]


def fill(store, count: int) -> None:
    """``count`` jobs: a dataset per 10 models, sweeps, a few running, summaries like real ones.

    A dataset per 10 jobs fills both tables' first page (50 rows) at either count, so the two
    sizes draw the same number of rows and any growth in time or bytes is the server's."""
    start = time.time() - count
    jobs = []
    for i in range(count):
        kind = "dataset" if i % 10 == 0 else "model"
        summary = {"best": {"epoch": 10, "val_accuracy": 50 + i % 50}, "epoch": 10} if kind == "model" else \
            {"classes": ["a", "b"], "images": {"train": 100, "val": 25}}
        jobs.append(Job(id=f"j{i:06d}", kind=kind, name=f"job {i}", status=STATUSES[i % len(STATUSES)],
                        parent_id=f"j{i - i % 10:06d}" if kind == "model" else None,
                        group=f"sweep{i // 10}" if i % 3 == 0 else None, summary=summary,
                        progress=(i % 100) / 100, created_at=start + i, started_at=start + i,
                        finished_at=start + i + 60, updated_at=start + i + 60, needs={}))
    with store.session.begin() as s:
        s.add_all(jobs)


def timed(client, path: str, rounds: int, params: dict | None = None) -> tuple[float, int, int]:
    """(median seconds, bytes, status) of ``rounds`` GETs."""
    times, size, status = [], 0, 0
    for _ in range(rounds):
        t = time.perf_counter()
        response = client.get(path, params=params)
        times.append(time.perf_counter() - t)
        size, status = len(response.content), response.status_code
    return statistics.median(times), size, status


def measure(count: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home", data_roots=[Path(tmp)])
        app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
        # TestClient's requests say "Host: 127.0.0.1", a name the server answers to by default.
        with TestClient(app, base_url="http://127.0.0.1",
                        headers={"Authorization": f"Bearer {app.state.auth_token}"}) as client:
            fill(app.state.ctx.store, count)
            client.get("/partials/jobs")  # warm: templates compiled, connections open
            redraw, redraw_bytes, _ = timed(client, "/partials/jobs", rounds)
            version = client.get("/partials/jobs").headers["X-Jobs-Version"]
            idle, idle_bytes, status = timed(client, "/partials/jobs", rounds, {"since": version})
            assert status == 204, status
            api, api_bytes, _ = timed(client, "/api/jobs", rounds, {"limit": 50})
    return {"redraw": (redraw, redraw_bytes), "idle": (idle, idle_bytes), "api page": (api, api_bytes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs=2, default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    small, large = args.counts
    a, b = measure(small, args.rounds), measure(large, args.rounds)
    print(f"{'refresh':<10} {small:>7,} jobs        {large:>7,} jobs        ratio time  bytes  (aim <= 1.2)")
    for case in a:
        (ta, ba), (tb, bb) = a[case], b[case]
        print(f"{case:<10} {1000 * ta:7.1f} ms {ba / 1024:6.1f} KiB  {1000 * tb:7.1f} ms {bb / 1024:6.1f} KiB"
              f"  {tb / ta:9.2f}x {bb / max(ba, 1):5.2f}x")


if __name__ == "__main__":
    main()
