"""Classify for the server without running user code in it: custom networks answer from workers.

A standard network is built in the calling process (its code ships with trainyard). A custom
network's source is user code, so its checkpoint is served by a `ModelWorker`: a sandboxed child
(sandbox/childproc.py, forked from the warm checker of networks/isolated.py; its side is
inference/worker_process.py) that loads it once and answers request after request. The sandbox lets it
read its job folder and nothing of the server's, write nothing, start no process, and hold no
more memory than TRAINYARD_SANDBOX_MEMORY_MB. One worker per checkpoint, at most `MAX_WORKERS`,
the least recently used killed first; a worker that takes too long to load or to answer, goes
over its memory, floods or forges its answer pipe is killed (its whole process group) and the
request gets a 503 that says so; a worker idle for `IDLE_S` is killed by the next request or by
the reaper thread. Nothing a worker sends is unpickled here, and answers are size-bounded.
"""

from __future__ import annotations

import atexit
import base64
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainyard.core.environment import child_environment
from trainyard.core.errors import Conflict, UserError
from trainyard.core.paths import checkpoint_owner
from trainyard.inference.loader import UserCode, load_model
from trainyard.inference.responses import answer
from trainyard.networks.isolated import CHECKER
from trainyard.sandbox.childproc import Child, ChildFailed, default_policy

START_TIMEOUT_S = 120.0  # starting Python and importing torch, on a busy machine (no warm checker)
LOAD_TIMEOUT_S = 60.0  # the user's build() and loading the weights
REQUEST_TIMEOUT_S = 60.0  # one classify request (up to 64 images, with layer views)
IDLE_S = 600.0  # a worker unused this long is stopped
MAX_WORKERS = 4
MAX_ANSWER_BYTES = 256 << 20  # 64 images with every layer's views


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
    """One sandboxed child process serving one custom network checkpoint."""

    def __init__(self, checkpoint: Path, task: str = "classification"):
        self.checkpoint = checkpoint
        self.lock = threading.Lock()
        self.used = time.monotonic()
        work = checkpoint.parent.parent  # WORK/checkpoints/epoch-N.pt: reads its own job's work only
        owner = checkpoint_owner(checkpoint)  # HOME/jobs/<id>: HOME stays hidden
        try:
            policy = default_policy(read=[str(work)], hidden=[str((owner or work).parent.parent)])
            self.child = Child("trainyard.inference.worker_process:handle", policy,
                               what="the custom network's worker", start_timeout=START_TIMEOUT_S, zygote=CHECKER)
        except ChildFailed as exc:
            raise WorkerUnavailable(str(exc)) from None
        try:
            doc = self._ask({"load": str(checkpoint), "task": task}, LOAD_TIMEOUT_S, "build the network")
            if doc.get("state") != "ready":
                raise WorkerError(f"the network cannot be loaded: {doc.get('error')}", doc.get("status", 422))
        except BaseException:
            self.stop()
            raise

    def _ask(self, request: dict, timeout: float, what: str) -> dict:
        try:
            return self.child.ask(request, timeout, MAX_ANSWER_BYTES, what)
        except ChildFailed as exc:
            if exc.timed_out:
                raise WorkerUnavailable(f"the custom network did not {what} within {timeout:g} s; "
                                        "its worker was stopped, try again or fix network.py") from None
            raise WorkerUnavailable(str(exc)) from None

    def ask(self, sources: Sequence[tuple[str, bytes | Path]], **options: Any) -> dict:
        """The worker's classify answer for ``sources``; WorkerError or WorkerUnavailable."""
        # Bytes, not paths: the worker's sandbox cannot read the server's uploads or data roots.
        images = [[name, {"data": base64.b64encode(src if isinstance(src, bytes) else Path(src).read_bytes())
                          .decode("ascii")}] for name, src in sources]
        with self.lock:
            self.used = time.monotonic()
            doc = self._ask({"images": images, **options}, REQUEST_TIMEOUT_S, "answer")
            self.used = time.monotonic()
        if "answer" not in doc:
            raise WorkerError(str(doc.get("error")), int(doc.get("status", 422)))
        return doc["answer"]

    def alive(self) -> bool:
        return self.child.alive()

    def stop(self) -> None:
        """Kill the worker and everything it started (its own process group)."""
        self.child.stop()


class WorkerPool:
    """Workers by checkpoint (path, mtime, size): a rewritten checkpoint gets a fresh worker."""

    def __init__(self) -> None:
        self._workers: OrderedDict[tuple, ModelWorker] = OrderedDict()
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def has(self, key: tuple) -> bool:
        with self._lock:
            return key in self._workers

    def worker(self, key: tuple, path: Path, task: str = "classification") -> ModelWorker:
        self.reap()
        with self._lock:
            worker = self._workers.get(key)
            if worker is not None and worker.alive():
                self._workers.move_to_end(key)
                return worker
            self._workers.pop(key, None)
        worker = ModelWorker(path, task)  # outside the lock: a slow start must not hold other models
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
                        layers: bool = False, saliency: bool = False, custom: bool | None = None) -> dict:
    """The classify document of checkpoint ``path``; a custom network answers from its worker.

    ``custom``: what the store recorded for the model's job (jobs/store/confinement.py). A
    custom one is never read in this process, only in its worker; a checkpoint that claims
    otherwise than the record is refused (`CheckpointClaim`, 409). None (a checkpoint no job
    records): the checkpoint itself says, read here with custom networks refused."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if custom is False:
        try:
            loaded = load_model(path, user_code=False)
        except UserCode:
            raise CheckpointClaim(f"{path.name} holds a custom network, but its job was recorded with a "
                                  "standard one: refused") from None
        return answer(loaded, sources, top=top, layers=layers, saliency=saliency)
    if custom is None and not POOL.has(key):  # a checkpoint with a worker is known to be custom
        try:
            loaded = load_model(path, user_code=False)
            return answer(loaded, sources, top=top, layers=layers, saliency=saliency)
        except UserCode:
            pass
    doc = POOL.worker(key, path).ask(sources, top=top, layers=layers, saliency=saliency)
    if custom and doc.get("network") != "custom":
        raise CheckpointClaim(f"{path.name} claims the standard network {doc.get('network')}, but its job "
                              "was recorded with a custom one: refused")
    return doc


class CheckpointClaim(Conflict):
    """A checkpoint whose network disagrees with what the store recorded for its job (HTTP 409)."""
