"""The adversarial run's harness (bench/security/adversary.py): ``trainyard serve`` in a subprocess of its
own, a tally of requests and 5xx answers, a peak-RSS sampler, test images and a job waiter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil
from PIL import Image

from tests.live_server import free_port, wait_until_up
from trainyard.core import server_token
from trainyard.core.status import FINAL_STATUSES


class Tally:
    def __init__(self) -> None:
        self.requests = self.server_errors = self.escapes = self.bypasses = 0
        self.notes: list[str] = []

    def seen(self, response: httpx.Response, label: str) -> httpx.Response:
        self.requests += 1
        if response.status_code >= 500 and label != "read-only":
            self.server_errors += 1
            self.notes.append(f"5xx {response.status_code} {label}: {response.text[:120]}")
        return response


class Server:
    """``trainyard serve`` in a subprocess, with its own port and environment."""

    def __init__(self, home: Path, data: Path, token: str = ""):
        self.env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(data),
                    "TRAINYARD_AUTH_TOKEN": token, "TRAINYARD_CPU_JOBS": "1",
                    # below the memory payload's 2 GiB (the default is half the machine's memory)
                    "TRAINYARD_SANDBOX_MEMORY_MB": "1536"}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.token = token

    def start(self) -> Server:
        code = "from trainyard.cli.main import app; app()"
        self.proc = subprocess.Popen([sys.executable, "-c", code, "serve", "--port", str(self.port)],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # /login answers without the token; 300 s: a loaded machine takes a while to start
        wait_until_up(self.url + "/login", lambda: self.proc is not None and self.proc.poll() is None, 300)
        # Every door needs the credential: the token given, else the one serve wrote for its user.
        self.token = self.env["TRAINYARD_AUTH_TOKEN"] or server_token.read(self.env["TRAINYARD_HOME"]) or ""
        return self

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


class PeakRSS:
    """Sample a process's resident memory every 20 ms while a block runs."""

    def __init__(self, pid: int):
        self.process, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()

    def __enter__(self) -> PeakRSS:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)


def make_images(root: Path, classes=("red", "blue"), count: int = 12) -> Path:
    colours = {"red": (220, 30, 30), "blue": (30, 30, 220)}
    rng = np.random.default_rng(0)
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            pixels = np.array(colours[name]) + rng.normal(0, 10, (28, 28, 3))
            Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(root / name / f"{i}.png")
    return root


def wait_job(client: httpx.Client, job_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job.get("status") in FINAL_STATUSES:
            return job
        time.sleep(0.5)
    raise RuntimeError(f"job {job_id} did not end")
