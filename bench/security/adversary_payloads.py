"""User-code payloads (issue 20): what a custom network's build() reaches, run against a server.

Each payload is a custom network whose build() first does one hostile thing, then returns a small
MLP. A model job holding it is made beside the server (its row and checkpoint, no training), and
one classify request makes the server run it (in a model worker, or, if the server can be fooled,
in itself). The harness then judges from outside what the payload reached:

    token hunt      the server's TRAINYARD_AUTH_TOKEN, from any /proc/<pid>/environ or cmdline
    store write     an UPDATE of the store's SQLite file (every job renamed)
    other job       a line appended to another job's log.txt
    cache forgery   forged .inputs.npz ("network": "lenet") and junk .onnx beside the snapshot:
                    does the server then build the network itself, or answer the forged classes?
    memory          2 GiB held by build(): is the worker still allowed to answer?
    fork            150 children forked by build()
    flood           300 MiB without a newline written to the answer pipe: the server's RSS
    forged answer   an {"answer": ...} line written to the answer pipe: returned to the client?
    training ...     a training job's build() over its memory or process limit (adversary_training.py)
    net ..., shm, proc, uid   what of the host's network, /dev/shm, processes and root the worker
                    reaches (adversary_namespaces.py)

`run_payloads` returns rows (payload, "reached" or "blocked", detail); adversary.py prints them.
Token, store, other job, memory and fork are stopped by the sandbox (sandbox/policy.py; a training
job's processes by its supervisor, sandbox/supervisor.py), flood and forged answer by the child
protocol (sandbox/childproc.py), cache forgery by the trust ledger;
``QUICK`` are those that need no sandbox (tests/inference/test_adversary_payloads.py).
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

SIZE, CHANNELS, CLASSES = 8, 3, ["a", "b"]
MARK = "pwned-by-payload"
BUILD = """
import os, glob
from torch import nn


def build(num_classes, in_channels, image_size):
{hostile}
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
"""
PIPES = """
def _answer_pipes():
    for fd in map(int, os.listdir('/proc/self/fd')):
        try:
            if fd > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):
                yield fd
        except OSError:
            pass
"""


@dataclass
class Target:
    """A running server as the payloads see it: a client, its home opened beside it, its pid."""

    client: Any  # httpx.Client or fastapi's TestClient, with the server's base URL and token
    ctx: Any  # trainyard.jobs.context.Context over the server's home
    server_pid: int
    token: str
    scratch: Path  # markers the harness reads


def payload_source(hostile: str, prelude: str = "") -> str:
    body = "\n".join("    " + line for line in hostile.strip("\n").splitlines())
    return prelude + BUILD.format(hostile=body)


def custom_model(target: Target, source: str, name: str = "payload") -> tuple[str, Path]:
    """A done model job whose one checkpoint holds ``source``: (job id, checkpoint path)."""
    import torch
    from torch import nn

    from trainyard.artifact.checkpoint import save_checkpoint
    from trainyard.core.paths import checkpoint_name

    manager = target.ctx.manager
    job = manager.create("model", name, {"kind": "model", "network_source": source}, needs={"pool": "cpu"})
    torch.manual_seed(0)
    state = nn.Sequential(nn.Flatten(), nn.Linear(CHANNELS * SIZE * SIZE, len(CLASSES))).state_dict()
    preprocess = {"width": SIZE, "height": SIZE, "channels": CHANNELS, "resize": "squash", "mean_mode": "none",
                  "crop": None, "scale": "0..1", "mean": None}
    path = save_checkpoint(manager.folder(job.id).checkpoints / checkpoint_name(1), {
        "model": state, "network": None, "network_source": source, "classes": CLASSES, "image_size": SIZE,
        "epoch": 1, "spec": {}, "preprocess": preprocess})
    return job.id, path


def classify(target: Target, model_id: str):
    buffer = io.BytesIO()
    Image.fromarray(np.full((SIZE, SIZE, 3), 128, np.uint8)).save(buffer, "PNG")
    return target.client.post(f"/api/models/{model_id}/classify",
                              files={"images": ("x.png", buffer.getvalue(), "image/png")})


def concurrent_gets(client, paths: list[str], wait_s: float) -> tuple[list[int], int]:
    """GET every path at once, each on its own thread: (the status codes answered, how many hung
    past ``wait_s``)."""
    import threading

    answers: list[int] = []
    threads = [threading.Thread(target=lambda p=p: answers.append(client.get(p).status_code), daemon=True)
               for p in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(wait_s)
    return answers, sum(t.is_alive() for t in threads)


def run_each(payloads: dict[str, Callable[[Any], tuple[str, str, str]]], target: Any) -> list[tuple[str, str, str]]:
    """Every payload's row against ``target``; a payload whose harness fails shows the error in
    its row, and the others still run."""
    rows = []
    for name, payload in payloads.items():
        try:
            rows.append(payload(target))
        except Exception as exc:
            rows.append((name, "error", f"{type(exc).__name__}: {exc}"))
    return rows


def _row(name: str, reached: bool, detail: str) -> tuple[str, str, str]:
    return name, "reached" if reached else "blocked", detail


def token_hunt(target: Target) -> tuple[str, str, str]:
    hunt = ("found = set()\n"
            "for path in glob.glob('/proc/[0-9]*/environ') + glob.glob('/proc/[0-9]*/cmdline'):\n"
            "    try:\n"
            "        data = open(path, 'rb').read()\n"
            "    except OSError:\n"
            "        continue\n"
            "    for part in data.split(b'\\0'):\n"
            "        if b'AUTH_TOKEN=' in part:\n"
            "            found.add(part.split(b'=', 1)[1].decode(errors='replace'))\n"
            "if found:\n"
            "    raise RuntimeError('tokens: ' + ' '.join(sorted(found)))")
    model, _ = custom_model(target, payload_source(hunt), "token hunt")
    response = classify(target, model)
    return _row("token hunt", bool(target.token) and target.token in response.text, f"HTTP {response.status_code}")


def store_write(target: Target) -> tuple[str, str, str]:
    database = target.ctx.settings.home / "trainyard.db"
    write = ("import sqlite3\n"
             f"with sqlite3.connect({str(database)!r}, timeout=5) as db:\n"
             f"    db.execute(\"UPDATE jobs SET name = '{MARK}'\")")
    model, _ = custom_model(target, payload_source(write), "store write")
    response = classify(target, model)
    renamed = any(job.name == MARK for job in target.ctx.store.list_jobs())
    return _row("store write", renamed, f"HTTP {response.status_code}")


def other_job(target: Target) -> tuple[str, str, str]:
    victim = target.ctx.manager.create("model", "victim", {"kind": "model"}, needs={"pool": "cpu"})
    log = target.ctx.manager.folder(victim.id).log
    write = f"with open({str(log)!r}, 'a') as f:\n    f.write({MARK!r})"
    model, _ = custom_model(target, payload_source(write), "other job")
    response = classify(target, model)
    return _row("other job's folder", log.exists() and MARK in log.read_text(), f"HTTP {response.status_code}")


def cache_forgery(target: Target) -> tuple[str, str, str]:
    from trainyard.inference import ort_runtime

    marker = target.scratch / "built-in-server"
    record = (f"if os.getpid() == {target.server_pid}:\n"
              f"    open({str(marker)!r}, 'w').write('the server built user code')")
    model, snapshot = custom_model(target, payload_source(record), "cache forgery")
    about = {"classes": ["forged-1", "forged-2"], "epoch": 1, "network": "lenet", "spec": {},
             "preprocess": {"width": SIZE, "height": SIZE, "channels": CHANNELS, "resize": "squash",
                            "mean_mode": "none", "crop": None, "scale": "0..1"}}
    buffer = io.BytesIO()
    np.savez(buffer, about=np.array(json.dumps(about)))
    ort_runtime.inputs_path(snapshot).write_bytes(buffer.getvalue())  # what the job's user code can write
    ort_runtime.onnx_path(snapshot).write_bytes(b"junk" * 256)
    later = time.time_ns() + 10**9
    for path in (ort_runtime.inputs_path(snapshot), ort_runtime.onnx_path(snapshot)):
        os.utime(path, ns=(later, later))
    response = classify(target, model)
    forged = "forged-1" in response.text
    return _row("cache forgery", marker.exists() or forged,
                f"HTTP {response.status_code}; built in the server: {marker.exists()}; forged classes: {forged}")


def memory(target: Target) -> tuple[str, str, str]:
    model, _ = custom_model(target, payload_source("hold = b'\\1' * (2 << 30)\nbuild.held = hold"), "memory")
    response = classify(target, model)  # the bench's server allows user code 1.5 GiB
    return _row("memory (2 GiB)", response.status_code == 200, f"HTTP {response.status_code}: {_detail(response)}")


def fork(target: Target) -> tuple[str, str, str]:
    spawn = ("import time\n"
             "count = 0\n"
             "for _ in range(150):\n"
             "    try:\n"
             "        pid = os.fork()\n"
             "    except OSError:\n"
             "        break\n"
             "    if pid == 0:\n"
             "        time.sleep(5)\n"
             "        os._exit(0)\n"
             "    count += 1\n"
             "raise RuntimeError(f'forked {count} children')")
    model, _ = custom_model(target, payload_source(spawn), "fork")
    response = classify(target, model)
    return _row("fork (150)", "forked 150 children" in response.text, f"HTTP {response.status_code}")


def flood(target: Target) -> tuple[str, str, str]:
    import psutil

    write = ("chunk = b'x' * (1 << 20)\n"
             "for fd in _answer_pipes():\n"
             "    try:\n"
             "        for _ in range(300):\n"
             "            os.write(fd, chunk)\n"
             "    except OSError:\n"
             "        pass")
    model, _ = custom_model(target, payload_source(write, PIPES), "flood")
    server = psutil.Process(target.server_pid)
    before = server.memory_info().rss
    response = classify(target, model)
    grown = (server.memory_info().rss - before) / 2**20
    return _row("flood (300 MiB)", grown > 150, f"HTTP {response.status_code}; server RSS +{grown:.0f} MiB")


def _detail(response) -> str:
    """The refusal's one line, shortened for the table."""
    try:
        return str(response.json().get("detail", ""))[:90]
    except ValueError:
        return ""


def forged_answer(target: Target) -> tuple[str, str, str]:
    answer = {"answer": {"results": [{"image": "x.png", "predictions": [["FORGED", 1.0]]}]}}
    write = (f"line = {json.dumps(answer)!r}.encode() + b'\\n'\n"
             "for fd in _answer_pipes():\n"
             "    try:\n"
             "        os.write(fd, line)\n"
             "    except OSError:\n"
             "        pass")
    model, _ = custom_model(target, payload_source(write, PIPES), "forged answer")
    first, second = classify(target, model), classify(target, model)
    forged = "FORGED" in first.text or "FORGED" in second.text
    # Reached: the forged document came back, or the next answer was out of step (a 4xx for a
    # request that was fine). A worker that breaks the protocol at every build answers 503 each time.
    out_of_step = second.status_code not in (200, 503)
    return _row("forged answer", forged or out_of_step,
                f"HTTP {first.status_code}, then {second.status_code}: {_detail(second)}")


def _training(name: str) -> Callable[[Target], tuple[str, str, str]]:
    def run(target: Target) -> tuple[str, str, str]:
        from bench.security import adversary_training  # it builds on this module's helpers

        return getattr(adversary_training, name)(target)

    return run


# adversary_namespaces.py
NAMESPACE_PAYLOADS = ("net-tcp", "net-udp", "net-unix", "shm", "proc", "uid", "keyring", "memfd")


def _namespaced(name: str) -> Callable[[Target], tuple[str, str, str]]:
    def run(target: Target) -> tuple[str, str, str]:
        from bench.security import adversary_namespaces  # it builds on this module's helpers

        return adversary_namespaces.PAYLOADS[name](target)

    return run


PAYLOADS: dict[str, Callable[[Target], tuple[str, str, str]]] = {
    "token": token_hunt, "store": store_write, "other-job": other_job, "cache": cache_forgery,
    "memory": memory, "fork": fork, "flood": flood, "answer": forged_answer,
    "training-memory": _training("training_memory"), "training-fork": _training("training_fork"),
    **{name: _namespaced(name) for name in NAMESPACE_PAYLOADS},
}
QUICK = ("cache",)  # stopped without a sandbox (the trust ledger, inference/trust.py)


def run_payloads(target: Target, names: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    rows = []
    for name in names or tuple(PAYLOADS):
        try:
            rows.append(PAYLOADS[name](target))
        except Exception as exc:  # the harness's own failure: shown, the others still run
            rows.append((name, "error", f"{type(exc).__name__}: {exc}"))
    return rows


def table(rows: list[tuple[str, str, str]]) -> str:
    lines = [f"{'payload':<22} {'result':<8} detail"]
    lines += [f"{name:<22} {result:<8} {detail}" for name, result, detail in rows]
    return "\n".join(lines)


def against_live_server(url: str, home: Path, pid: int, token: str, scratch: Path,
                        names: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    """The payloads against ``trainyard serve`` at ``url`` (pid ``pid``, home ``home``)."""
    import httpx

    from trainyard.jobs.context import open_context
    from trainyard.settings import Settings

    ctx = open_context(Settings(home=home, auth_token=token))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, timeout=600, headers=headers) as client:
        return run_payloads(Target(client, ctx, pid, token, scratch), names)
