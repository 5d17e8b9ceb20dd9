"""Classify for the server without running user code in it: custom networks answer from workers.

A standard network is built in the calling process (its code ships with trainyard). A custom
network's source is user code, so its checkpoint is served by a `ModelWorker`, a child process
(inference/worker.py) that loads it once and answers request after request. One worker per
checkpoint, at most `MAX_WORKERS`, the least recently used killed first; a worker that takes too
long to load or to answer is killed (its whole process group) and the request gets a 503 that
says so; a worker idle for `IDLE_S` is killed by the next request or by the reaper thread.
The conversation is JSON lines (see worker.py): nothing a worker sends is unpickled here.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from trainyard.core.environment import child_environment, kill_group
from trainyard.core.errors import UserError
from trainyard.inference.loader import UserCode, load_model
from trainyard.inference.responses import answer

START_TIMEOUT_S = 120.0  # starting Python and importing torch, on a busy machine
LOAD_TIMEOUT_S = 60.0  # the user's build() and loading the weights
REQUEST_TIMEOUT_S = 60.0  # one classify request (up to 64 images, with layer views)
IDLE_S = 600.0  # a worker unused this long is stopped
MAX_WORKERS = 4


class WorkerError(UserError):
    """The worker answered that the request cannot be served; the status is the worker's."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.http_status = status


class WorkerUnavailable(UserError):
    """The network's worker timed out or died: the request was not served (HTTP 503)."""

    http_status = 503


def worker_env() -> dict[str, str]:
    """The environment of a process that runs user code: no secrets, no GPU."""
    return child_environment(CUDA_VISIBLE_DEVICES="")  # the server's own classify runs on the CPU too


class ModelWorker:
    """One child process serving one custom network checkpoint."""

    def __init__(self, checkpoint: Path):
        self.checkpoint = checkpoint
        self.lock = threading.Lock()
        self.used = time.monotonic()
        self._stderr = tempfile.TemporaryFile()  # kept to explain a crash
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainyard.inference.worker", str(checkpoint)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=worker_env(), start_new_session=True)
        self._buffer = b""
        try:
            self._expect_state("started", START_TIMEOUT_S, "start")
            self._expect_state("ready", LOAD_TIMEOUT_S, "build the network")
        except BaseException:
            self.stop()
            raise

    def _expect_state(self, state: str, timeout: float, what: str) -> None:
        doc = self._receive(timeout, what)
        if doc.get("state") != state:
            raise WorkerError(f"the network cannot be loaded: {doc.get('error')}", doc.get("status", 422))

    def ask(self, sources: Sequence[tuple[str, bytes | Path]], **options) -> dict:
        """The worker's classify answer for ``sources``; WorkerError or WorkerUnavailable."""
        images = [[name, {"data": base64.b64encode(src).decode("ascii")} if isinstance(src, bytes)
                   else {"path": str(src)}] for name, src in sources]
        with self.lock:
            self.used = time.monotonic()
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write((json.dumps({"images": images, **options}) + "\n").encode())
                self.proc.stdin.flush()
            except OSError:  # a broken pipe: the worker is gone
                message = self._died("answer")
                self.stop()
                raise WorkerUnavailable(message) from None
            doc = self._receive(REQUEST_TIMEOUT_S, "answer")
            self.used = time.monotonic()
        if "answer" not in doc:
            raise WorkerError(str(doc.get("error")), int(doc.get("status", 422)))
        return doc["answer"]

    def _receive(self, timeout: float, what: str) -> dict:
        """The next JSON line from the worker, within ``timeout`` seconds, else it is killed."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.stop()
                raise WorkerUnavailable(f"the custom network did not {what} within {timeout:g} s; "
                                        "its worker was stopped, try again or fix network.py")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                message = self._died(what)
                self.stop()
                raise WorkerUnavailable(message)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            self.stop()
            raise WorkerUnavailable("the custom network's worker sent something that is not an answer")
        return doc

    def _died(self, what: str) -> str:
        code = self.proc.wait()
        self._stderr.seek(0)
        tail = self._stderr.read()[-300:].decode("utf-8", "replace").strip().splitlines()
        reason = f": {tail[-1]}" if tail else ""
        return f"the custom network's worker exited (code {code}) before it could {what}{reason}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """Kill the worker and everything it started (its own process group)."""
        kill_group(self.proc)  # also reaps it and closes its pipes
        self._stderr.close()


class WorkerPool:
    """Workers by checkpoint (path, mtime, size): a rewritten checkpoint gets a fresh worker."""

    def __init__(self) -> None:
        self._workers: OrderedDict[tuple, ModelWorker] = OrderedDict()
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def has(self, key: tuple) -> bool:
        with self._lock:
            return key in self._workers

    def worker(self, key: tuple, path: Path) -> ModelWorker:
        self.reap()
        with self._lock:
            worker = self._workers.get(key)
            if worker is not None and worker.alive():
                self._workers.move_to_end(key)
                return worker
            self._workers.pop(key, None)
        worker = ModelWorker(path)  # outside the lock: a slow start must not hold other models
        with self._lock:
            self._workers[key] = worker
            while len(self._workers) > MAX_WORKERS:
                self._workers.popitem(last=False)[1].stop()
        self._start_reaper()
        return worker

    def reap(self) -> None:
        """Stop workers idle for longer than IDLE_S (and forget dead ones)."""
        now = time.monotonic()
        with self._lock:
            stale = [k for k, w in self._workers.items()
                     if not w.alive() or (now - w.used > IDLE_S and not w.lock.locked())]
            doomed = [self._workers.pop(k) for k in stale]
        for worker in doomed:
            worker.stop()

    def close(self) -> None:
        with self._lock:
            doomed = list(self._workers.values())
            self._workers.clear()
        for worker in doomed:
            worker.stop()

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap_forever, daemon=True,
                                            name="trainyard-worker-reaper")
            self._reaper.start()

    def _reap_forever(self) -> None:
        while True:
            time.sleep(min(IDLE_S / 4, 60))
            self.reap()


POOL = WorkerPool()
atexit.register(POOL.close)  # workers also exit when their stdin closes with this process


def classify_checkpoint(path: Path, sources: Sequence[tuple[str, bytes | Path]], *, top: int = 5,
                        layers: bool = False, saliency: bool = False) -> dict:
    """The classify document of checkpoint ``path``; a custom network answers from its worker."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if not POOL.has(key):  # a checkpoint with a worker is known to be custom: not read again
        try:
            loaded = load_model(path, user_code=False)
            return answer(loaded, sources, top=top, layers=layers, saliency=saliency)
        except UserCode:
            pass
    return POOL.worker(key, path).ask(sources, top=top, layers=layers, saliency=saliency)
