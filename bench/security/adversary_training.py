"""Training payloads (issue 20): a custom network's build() inside a training job, over its limits.

    training memory   16 GiB asked for by build(), past the bench server's 1536 MiB a process
                      running user code may take: does the job get it, or end failed saying so?
    training fork     300 sleeping children forked by build(), past the job's process limit
                      (sandbox/job.py): are they stopped, and the job failed saying so? Each
                      child is found on the host by its pid inside the job's PID namespace, that
                      namespace and its start time (/proc/PID/status's NSpid), not by the pid
                      the job wrote, which names another process outside its namespace

Both go the whole way a user's job does: a dataset built by the server from images in its data
root, a model created with the network's source (its check runs elsewhere: build() misbehaves
only in the job's work folder, the spec beside it), the job trained by the server. adversary_payloads.py runs them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.security.adversary_payloads import Target, _row, payload_source
from bench.security.adversary_server import make_images, wait_job

from trainyard.core.status import Status

_datasets: dict[int, str] = {}  # one dataset per server
LINGER_S = 30  # how long a stopped job's killed children may take to be gone before they count as left


def training_memory(target: Target) -> tuple[str, str, str]:
    hold = "if os.path.isfile(os.path.join('..', 'spec.json')):\n    hold = bytearray(16 << 30)"
    job = _train(target, hold, "training memory")
    stopped = job["status"] == Status.FAILED and "GiB of memory" in (job["error"] or "")
    return _row("train memory (16 GiB)", not stopped, f"{job['status']}: {(job['error'] or '')[:90]}")


def training_fork(target: Target) -> tuple[str, str, str]:
    # Each child is named by what the host can check too: its pid as the job sees it (in its own
    # PID namespace, where it has one), that namespace and its start time (ticks since boot).
    spawn = ("import time\n"
             "if os.path.isfile(os.path.join('..', 'spec.json')):\n"
             "    namespace = os.readlink('/proc/self/ns/pid')\n"
             "    for _ in range(300):\n"
             "        pid = os.fork()\n"
             "        if pid == 0:\n"
             "            time.sleep(120)\n"
             "            os._exit(0)\n"
             "        start = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[19]\n"
             "        open('children.txt', 'a').write(f'{pid} {namespace} {start}\\n')  # in its work folder\n"
             "    time.sleep(120)")
    job = _train(target, spawn, "training fork")
    listed = target.ctx.manager.folder(job["id"]).work / "children.txt"
    lines = listed.read_text().splitlines() if listed.exists() else []
    children = {(int(pid), namespace, int(start)) for pid, namespace, start in (line.split() for line in lines)}
    alive = len(children & _running())
    deadline = time.monotonic() + LINGER_S  # killed ones may take a moment to go
    while alive and time.monotonic() < deadline:
        time.sleep(1)
        alive = len(children & _running())
    stopped = job["status"] == Status.FAILED and "processes" in (job["error"] or "") and not alive
    return _row("train fork (300)", not stopped,
                f"{len(children)} forked, {alive} left; {job['status']}: {(job['error'] or '')[:60]}")


def _running() -> set[tuple[int, str, int]]:
    """Every process on this machine as (its pid in its own PID namespace, that namespace, its
    start time): how a job's child, which only knows its pid inside, is found from outside."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            namespace = os.readlink(f"/proc/{entry.name}/ns/pid")
            status = Path(f"/proc/{entry.name}/status").read_text()
            start = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        inner = next((line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:")), entry.name)
        found.add((int(inner), namespace, start))
    return found


def _train(target: Target, hostile: str, name: str) -> dict:
    """The ended job of a model trained by the server on ``payload_source(hostile)``."""
    response = target.client.post("/api/models", json={
        "name": name, "datasets": [_dataset(target)], "network_source": payload_source(hostile),
        "settings": {"epochs": 1}})
    if response.status_code != 201:
        raise RuntimeError(f"the model was refused: HTTP {response.status_code} {response.text[:200]}")
    return wait_job(target.client, response.json()["jobs"][0]["id"], timeout=900)


def _dataset(target: Target) -> str:
    if id(target) not in _datasets:
        folder = make_images(target.scratch / "training-images", count=6)
        response = target.client.post("/api/datasets", json={
            "name": "payload images", "train_folder": str(folder), "width": 8, "height": 8, "val_percent": 25})
        if response.status_code != 201:
            raise RuntimeError(f"the dataset was refused: HTTP {response.status_code} {response.text[:200]}")
        job = wait_job(target.client, response.json()["id"], timeout=900)
        if job["status"] != Status.DONE:
            raise RuntimeError(f"the dataset did not build: {job['error']}")
        _datasets[id(target)] = job["id"]
    return _datasets[id(target)]
