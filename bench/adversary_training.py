"""Training payloads (issue 20): a custom network's build() inside a training job, over its limits.

    training memory   16 GiB asked for by build(), past the bench server's 1536 MiB a process
                      running user code may take: does the job get it, or end failed saying so?
    training fork     300 sleeping children forked by build(), past the job's process limit
                      (sandbox/job.py): are they stopped, and the job failed saying so?

Both go the whole way a user's job does: a dataset built by the server from images in its data
root, a model created with the network's source (its check runs elsewhere: build() misbehaves
only in the job's own folder), the job trained by the server. adversary_payloads.py runs them.
"""

from __future__ import annotations

import psutil
from bench.adversary_payloads import Target, _row, payload_source
from bench.adversary_server import make_images, wait_job

from trainyard.core.status import Status

_datasets: dict[int, str] = {}  # one dataset per server


def training_memory(target: Target) -> tuple[str, str, str]:
    job = _train(target, "if os.path.isfile('spec.json'):\n    hold = bytearray(16 << 30)", "training memory")
    stopped = job["status"] == Status.FAILED and "GiB of memory" in (job["error"] or "")
    return _row("train memory (16 GiB)", not stopped, f"{job['status']}: {(job['error'] or '')[:90]}")


def training_fork(target: Target) -> tuple[str, str, str]:
    spawn = ("import time\n"
             "if os.path.isfile('spec.json'):\n"
             "    for _ in range(300):\n"
             "        pid = os.fork()\n"
             "        if pid == 0:\n"
             "            time.sleep(120)\n"
             "            os._exit(0)\n"
             "        open('children.txt', 'a').write(f'{pid}\\n')  # in its job folder\n"
             "    time.sleep(120)")
    job = _train(target, spawn, "training fork")
    pids = target.ctx.manager.folder(job["id"]).path / "children.txt"
    children = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    alive = sum(psutil.pid_exists(pid) for pid in children)
    stopped = job["status"] == Status.FAILED and "processes" in (job["error"] or "") and not alive
    return _row("train fork (300)", not stopped,
                f"{len(children)} forked, {alive} left; {job['status']}: {(job['error'] or '')[:60]}")


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
