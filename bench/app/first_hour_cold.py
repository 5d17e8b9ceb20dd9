"""The cold paths of issue 31 point 3, for bench/app/first_hour.py: importing an archive from the CLI
and from the browser, and the first Create that fine-tunes a previous model, each timed in wall
and CPU seconds (the command's, or the server's own CPU for a request to it).

  import, no server        `trainyard import ARCHIVE` on a fresh home, no server running
  import custom, no server the same with a custom network.py (its check runs user code)
  import, server running   the same while `trainyard serve` runs (its checker warm)
  browser import, first    POST /api/models/import to a server that has imported nothing yet
  Create from previous     POST /api/models fine-tuning that imported model (no network named:
                           DIGITS's "Previous networks"), the first Create of the server
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

PY = sys.executable


def tree_cpu(proc: psutil.Process, seen: dict[int, float]) -> None:
    """Note the CPU seconds (own, not waited-for children's) of ``proc`` and its descendants:
    a checker it starts in namespaces is never waited for, so rusage would leave it out."""
    for p in [proc, *proc.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.Error:
            continue
        seen[p.pid] = max(seen.get(p.pid, 0.0), times.user + times.system)


def timed_cpu(cmd: list[str], env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the command and every process under it as last sampled, each 0.1 s
    (the same way for every row, the bare `import torch` too), the finished process)."""
    seen: dict[int, float] = {}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        tree_cpu(watched, seen)
        time.sleep(0.1)
    stdout, stderr = proc.communicate()
    return time.perf_counter() - start, sum(seen.values()), subprocess.CompletedProcess(cmd, proc.returncode,
                                                                                       stdout, stderr)


def make_archives(folder: Path, root: Path) -> dict[str, Path]:
    """A LeNet archive and a custom-network one (network.py edited by hand), made once."""
    script = f"""
import sys; sys.path.insert(0, {str(root)!r})
from pathlib import Path
import torch
from tests.inference.deploy_helpers import make_checkpoint_job
from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
from trainyard.inference.export import export_model
from trainyard.networks import network_source
out = Path({str(folder)!r})
export_model(make_checkpoint_job(out / "std"), None, out / "lenet.tar.gz")
job = make_checkpoint_job(out / "custom")
path = checkpoint_for_epoch(job)
checkpoint = load_checkpoint(path)
checkpoint.update(network=None, network_source=network_source("lenet") + "\\n# edited by hand\\n")
torch.save(checkpoint, path)
export_model(job, None, out / "custom.tar.gz")
"""
    subprocess.run([PY, "-c", script], check=True, env=os.environ | {"PYTHONPATH": str(root / "src")})
    return {"standard": folder / "lenet.tar.gz", "custom": folder / "custom.tar.gz"}


def cli_import(archive: Path, env: dict, output: bool = False):
    """(wall s, CPU s) of `trainyard import ARCHIVE`; its JSON instead with ``output``."""
    seconds, cpu, done = timed_cpu([PY, "-m", "trainyard.cli.main", "import", str(archive), "--json"], env)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout if output else (seconds, cpu)


def _request(url: str, token: str, body: bytes, content_type: str) -> dict:
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": content_type, "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=900) as response:
        return json.loads(response.read())


def post_json(url: str, token: str, doc: dict) -> dict:
    return _request(url, token, json.dumps(doc).encode(), "application/json")


def post_file(url: str, token: str, path: Path) -> dict:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
            "Content-Type: application/gzip\r\n\r\n").encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    return _request(url, token, body, f"multipart/form-data; boundary={boundary}")


def server_cpu(proc: psutil.Process) -> float:
    """CPU seconds of the server and everything it started (its checker, the checks)."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            continue
    return total


def timed_request(proc: psutil.Process, call) -> tuple[float, float, dict]:
    """(wall s, the server's CPU s, the answer) of one request."""
    cpu, start = server_cpu(proc), time.perf_counter()
    answer = call()
    return time.perf_counter() - start, server_cpu(proc) - cpu, answer


def wait_for_warm_checker(server: psutil.Process, timeout: float = 600) -> None:
    """Return once the server has started its checker and it and everything it started are idle
    (the checker has loaded torch; its warm-networks thread, which imports torch into the server
    on a fresh home, is done), as a user finds it a while after `serve`. Waiting for the checker
    alone let a request's CPU take in the end of that thread's; and a checker that died once warm
    (as it did when tied to the thread that started it) is not waited for until the timeout."""
    deadline, last, quiet, seen = time.monotonic() + timeout, -1.0, 0, False
    while time.monotonic() < deadline and quiet < 10:
        used = server_cpu(server)
        seen = seen or any(_is_checker(p) for p in server.children(recursive=True))
        quiet = quiet + 1 if seen and used - last < 0.02 else 0
        last = used
        time.sleep(0.3)


def _is_checker(process: psutil.Process) -> bool:
    try:
        return "trainyard.sandbox.zygote" in " ".join(process.cmdline())
    except psutil.Error:  # a child that ended meanwhile
        return False


@contextmanager
def running_server(env: dict, home: Path, port: int) -> Iterator[tuple[str, str, psutil.Process]]:
    """`trainyard serve` on ``port``, up and its checker warm: (url, token, its process)."""
    from tests.live_server import wait_until_up

    server = subprocess.Popen([PY, "-m", "trainyard.cli.main", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url + "/api/system", lambda: server.poll() is None, timeout=300)
        token = (home / "server-token").read_text().strip()
        proc = psutil.Process(server.pid)
        wait_for_warm_checker(proc)
        yield url, token, proc
    finally:
        server.terminate()
        server.wait(60)
