"""Benchmark the live parts of the web app, in one run:

- event delay: a job process (a subprocess, like a real training) writes metric events to its
  events.jsonl at a steady rate; an SSE client of GET /api/jobs/{id}/events records when each
  arrives. The delay is arrival time minus the time the job wrote it. Halfway, the client drops
  the connection and reconnects with Last-Event-ID; every event must arrive exactly once.
  Aim: every event within 1 s.
- history replay: how long a new page takes to receive a long run's whole history (default
  50,000 metric events) over the same stream.
- home page: server time of GET / (and of the 2-second htmx refresh, /partials/jobs) with 1,000
  jobs in the store, measured inside the server (middleware) and at the client. Aim: < 200 ms.

    python bench/app/live.py                    # 1000 jobs, 200 live events at 20/s, 50k history
    python bench/app/live.py --jobs 5000 --history 100000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from trainyard.core.ids import new_job_id
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.store import Job
from trainyard.settings import Settings
from trainyard.web.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ helpers when run from a checkout
from tests.live_server import serving  # noqa: E402  (after the path is set)

WRITER = """
import sys, time
from trainyard.core.events import EventWriter
job_dir, count, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with EventWriter(job_dir) as events:
    start = time.perf_counter()
    for i in range(count):
        time.sleep(max(0.0, start + i / rate - time.perf_counter()))
        events.emit("metric", epoch=i / 100, name="train_loss", value=1.0 / (i + 1), sent=time.time())
"""


def timed_app(settings: Settings):
    """The app (no scheduler), timing each request inside the server."""
    app = create_app(settings, pools=Pools(2, 1, []), run_scheduler=False)
    timings: dict[str, list[float]] = {}

    @app.middleware("http")
    async def server_time(request, call_next):  # time inside the server, without the network
        start, cpu = time.perf_counter(), time.process_time()
        response = await call_next(request)
        # CPU time of the whole server process: it serves one request at a time here, so this is
        # that request's cost even when other programs load the machine (wall time is not).
        timings.setdefault(request.url.path, []).append((time.perf_counter() - start, time.process_time() - cpu))
        return response

    return app, timings


def add_job(ctx, kind: str, status: str, summary: dict, parent: str | None = None,
            group: str | None = None) -> Job:
    job_id = new_job_id()
    while ctx.manager.folder(job_id).path.exists():  # ids are per second: many jobs a second collide
        job_id = new_job_id()
    ctx.manager.folder(job_id).path.mkdir(parents=True)
    now = time.time()
    job = Job(id=job_id, kind=kind, name=f"{kind} {job_id[-4:]}", status=status, parent_id=parent,
              group=group, needs={"pool": "cpu"}, summary=summary, created_at=now - random.random() * 1e5,
              started_at=now - 100 if status != "queued" else None, progress=random.random(),
              eta=random.random() * 1000 if status == "running" else None,
              finished_at=now if status in ("done", "failed", "aborted") else None)
    return ctx.store.add_job(job)


def populate(ctx, total: int) -> None:
    """About one dataset per nine models, statuses mixed, summaries like real ones."""
    rng = random.Random(0)
    datasets = []
    for _ in range(max(1, total // 10)):
        summary = {"classes": [f"class{k}" for k in range(10)], "images": {"train": 9000, "val": 3000},
                   "width": 256, "height": 256, "channels": 3, "skipped_total": rng.randrange(5),
                   "counts": {"train": {f"class{k}": 900 for k in range(10)}}}
        datasets.append(add_job(ctx, "dataset", "done", summary))
    statuses = ["done"] * 6 + ["running", "queued", "waiting", "failed", "aborted"]
    for i in range(total - len(datasets)):
        status = rng.choice(statuses)
        summary = {"epoch": rng.random() * 30, "best": {"epoch": rng.randrange(30), "val_accuracy": rng.random() * 100},
                   "val_accuracy": rng.random() * 100}
        if status == "running":
            summary["resources"] = [f"gpu:{rng.randrange(8)}"]
        add_job(ctx, "model", status, summary, parent=rng.choice(datasets).id,
                group=f"sweep{i // 6}" if i % 3 == 0 else None)


AUTH: dict[str, str] = {}  # the served app's credential, set once it is made


class SSEClient:
    """Reads a job's event stream, recording (id, event, arrival time); can drop and reconnect."""

    def __init__(self, url: str):
        self.url = url
        self.received: list[tuple[int, dict, float]] = []
        self.ended = threading.Event()
        self.drop = threading.Event()
        self.reconnects = 0

    def run(self) -> None:
        while not self.ended.is_set():
            headers = {"Last-Event-ID": str(self.received[-1][0])} if self.received else {}
            headers.update(AUTH)
            with httpx.stream("GET", self.url, headers=headers, timeout=None) as response:
                event_id, kind = None, None
                for line in response.iter_lines():
                    if line.startswith("id: "):
                        event_id = int(line[4:])
                    elif line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        if kind == "end":
                            self.ended.set()
                            return
                        self.received.append((event_id, json.loads(line[6:]), time.time()))
                        if self.drop.is_set():
                            self.drop.clear()
                            self.reconnects += 1
                            break  # close the connection mid-stream, like a dropped network


def measure_delay(ctx, url: str, count: int, rate: float) -> dict:
    job = add_job(ctx, "model", "running", {})
    folder = ctx.manager.folder(job.id).path
    client = SSEClient(f"{url}/api/jobs/{job.id}/events")
    reader = threading.Thread(target=client.run, daemon=True)
    reader.start()
    time.sleep(0.5)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(count), str(rate)])
    time.sleep(count / rate / 2)
    client.drop.set()
    writer.wait()
    time.sleep(1.0)
    ctx.store.update_job(job.id, status="done")
    client.ended.wait(10)
    ids = [i for i, _, _ in client.received]
    delays = sorted(arrived - event["sent"] for _, event, arrived in client.received)
    return {"events": count, "received": len(ids), "unique": len(set(ids)),
            "in_order_without_gaps": ids == list(range(count)), "reconnects": client.reconnects,
            "delay_median_ms": round(1000 * statistics.median(delays), 1),
            "delay_p95_ms": round(1000 * delays[int(0.95 * (len(delays) - 1))], 1),
            "delay_max_ms": round(1000 * delays[-1], 1)}


def measure_replay(ctx, url: str, count: int) -> dict:
    job = add_job(ctx, "model", "done", {})
    with open(ctx.manager.folder(job.id).events, "w") as f:
        for i in range(count):
            name = ("train_loss", "lr", "val_loss", "val_accuracy")[i % 4]
            f.write(json.dumps({"type": "metric", "time": 0, "epoch": i / 400, "name": name, "value": 1.0}) + "\n")
    client = SSEClient(f"{url}/api/jobs/{job.id}/events")
    start = time.perf_counter()
    client.run()
    seconds = time.perf_counter() - start
    return {"events": count, "received": len(client.received), "seconds": round(seconds, 2),
            "events_per_second": round(len(client.received) / seconds)}


def measure_home(url: str, timings: dict, repeat: int) -> dict:
    out = {}
    with httpx.Client(base_url=url, timeout=30, headers=AUTH) as client:
        for path in ("/", "/partials/jobs"):
            client.get(path)  # warm up: templates compile on first use
            timings.pop(path, None)
            wall = []
            for _ in range(repeat):
                start = time.perf_counter()
                response = client.get(path)
                wall.append(time.perf_counter() - start)
                assert response.status_code == 200
            server = sorted(w for w, _ in timings[path])
            cpu = sorted(c for _, c in timings[path])
            out[path] = {"server_median_ms": round(1000 * statistics.median(server), 1),
                         "server_p95_ms": round(1000 * server[int(0.95 * (len(server) - 1))], 1),
                         "server_cpu_median_ms": round(1000 * statistics.median(cpu), 1),
                         "client_median_ms": round(1000 * statistics.median(wall), 1),
                         "bytes": len(response.content)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the store for the home page")
    parser.add_argument("--events", type=int, default=200, help="live events to time")
    parser.add_argument("--rate", type=float, default=20.0, help="live events per second")
    parser.add_argument("--history", type=int, default=50_000, help="events of the replayed history")
    parser.add_argument("--repeat", type=int, default=20, help="home page requests to time")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home", data_roots=[Path(tmp)])
        app, timings = timed_app(settings)
        AUTH["Authorization"] = f"Bearer {app.state.auth_token}"  # every door needs it (web/auth.py)
        ctx = app.state.ctx
        with serving(app) as url:
            delay = measure_delay(ctx, url, args.events, args.rate)
            replay = measure_replay(ctx, url, args.history)
            populate(ctx, args.jobs)
            home = measure_home(url, timings, args.repeat)

    print(f"events: {delay['received']} of {delay['events']} received, {delay['unique']} unique, "
          f"in order without gaps: {delay['in_order_without_gaps']} ({delay['reconnects']} reconnect)")
    print(f"event delay (written -> at the SSE client): median {delay['delay_median_ms']} ms, "
          f"p95 {delay['delay_p95_ms']} ms, max {delay['delay_max_ms']} ms  (aim: < 1000 ms)")
    print(f"history replay: {replay['received']} events in {replay['seconds']} s "
          f"({replay['events_per_second']:,} events/s)")
    for path, figures in home.items():
        print(f"GET {path} with {args.jobs} jobs: server median {figures['server_median_ms']} ms "
              f"(CPU {figures['server_cpu_median_ms']} ms), p95 {figures['server_p95_ms']} ms; client median "
              f"{figures['client_median_ms']} ms; {figures['bytes'] / 1024:.0f} KiB  (aim: < 200 ms)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    ok = delay["delay_max_ms"] < 1000 and delay["in_order_without_gaps"] and home["/"]["server_median_ms"] < 200
    print(json.dumps({"delay": delay, "replay": replay, "home": home, "aims_met": ok}))


if __name__ == "__main__":
    main()
