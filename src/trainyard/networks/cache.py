"""What does not change about a network, computed once: checks, layer listings, parameter counts.

A check (build plus forward passes in a child process, see isolated.py) costs seconds, mostly in
importing torch, unless a source's text alone shows it wrong (source_check.py: milliseconds,
no user code run); its answer depends only on the request (network name or source, classes,
channels, input size) and on the versions of torch and trainyard. So answers are kept in memory
(one store per process: keys hold everything an answer depends on, so the caches of several
homes share it) and, for standard networks, as small JSON files in the cache's folder, shared
by the server and the CLI and kept across restarts; a custom source changes with every edit, so
its answers stay in memory. Checks that timed out or crashed are not kept: they may work next
time. Importing this module loads no torch (only counting parameters does), so a process that
finds its answers here, such as `trainyard train --submit` checking a queued job, stays light.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import trainyard
from trainyard.core.vocabulary import DEFAULT_TASK, Task

from .check_gate import CheckGate
from .isolated import check_network_isolated, check_timeout
from .source_check import precheck_source

MEMORY_ENTRIES = 256
_memory: OrderedDict[str, dict] = OrderedDict()
_memory_lock = threading.Lock()
_count_lock = threading.Lock()
checks = CheckGate()  # one checker queue per process, whatever the home
# Asked before this process starts a checker of its own: a command sets it to ask a running
# server, whose checker is warm (about a second instead of a torch start); it returns the
# answer, or None to check here (it may say so first: the check here takes seconds).
ask_first: Callable[[dict], dict | None] | None = None


class NetworkCache:
    """Cached `check_network_isolated` answers and standard-network parameter counts."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder

    def check(self, *, network: str | None = None, source: str | None = None, num_classes: int,
              in_channels: int, image_size: int | None, input_size: tuple[int, int] | None = None,
              timeout: float | None = None, task: Task = DEFAULT_TASK) -> dict:
        """`check_network_isolated`'s answer for this request, computed at most once (``timeout``:
        the caller's limit, else TRAINYARD_CHECK_TIMEOUT_S).

        Raises ChecksBusy (HTTP 429) when the checker's queue is full (check_gate.py)."""
        request = {"what": "check", "network": network, "source": source, "num_classes": num_classes,
                   "in_channels": in_channels, "image_size": image_size,
                   "input_size": list(input_size) if input_size else None}
        if task != DEFAULT_TASK:  # a classifier's key (and its cached answers) stays as it was
            request["task"] = task
        key = _key(request)
        answer = self._get(key)
        if answer is None and source is not None:
            # What the text alone shows (a SyntaxError, no build): milliseconds, in this process.
            answer = precheck_source(source)
            if answer is not None:
                self._remember(key, answer)
        if answer is not None:
            return answer

        def run() -> dict:
            found = self._get(key)  # answered while this one waited for a slot
            if found is not None:
                return found
            answer = (ask_first(request) if ask_first else None) or check_network_isolated(
                source, num_classes, in_channels, image_size, timeout or check_timeout(), network=network,
                input_size=input_size, task=task)
            if not answer.get("transient"):
                # A custom source changes with every edit: kept in memory only, so the folder
                # holds a bounded set (standard networks x the geometries of the datasets).
                self._put(key, answer, to_disk=network is not None)
            return answer

        return checks.run(key, run)

    def parameter_count(self, name: str, num_classes: int = 10, in_channels: int = 3) -> int:
        """Parameters of a standard network (our own code, so built in this process, on the
        meta device: no memory, and no weights)."""
        key = _key({"what": "params", "network": name, "num_classes": num_classes, "in_channels": in_channels})
        answer = self._get(key)
        if answer is None:
            # One count at a time: a request arriving while the start-up warm-up counts waits
            # for its answer instead of building the same networks beside it.
            with _count_lock:
                answer = self._get(key)
                if answer is None:
                    import torch  # here: a cached answer, or a check (a child process), needs none

                    from .registry import create_network

                    with torch.device("meta"):
                        model = create_network(name, num_classes, in_channels)
                    answer = {"params": sum(p.numel() for p in model.parameters())}
                    self._put(key, answer)
        return answer["params"]

    def _get(self, key: str) -> dict | None:
        with _memory_lock:
            if key in _memory:
                _memory.move_to_end(key)
                return _memory[key]
        if self.folder is None:
            return None
        try:
            answer = json.loads((self.folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        self._remember(key, answer)
        return answer

    def _put(self, key: str, answer: dict, to_disk: bool = True) -> None:
        self._remember(key, answer)
        if self.folder is None or not to_disk:
            return
        try:  # a cache that cannot be written only costs time
            self.folder.mkdir(parents=True, exist_ok=True)
            temp = self.folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            temp.write_text(json.dumps(answer))
            temp.replace(self.folder / f"{key}.json")
        except OSError:
            pass

    def _remember(self, key: str, answer: dict) -> None:
        with _memory_lock:
            _memory[key] = answer
            _memory.move_to_end(key)
            while len(_memory) > MEMORY_ENTRIES:
                _memory.popitem(last=False)


def _key(request: dict) -> str:
    """A digest of the request and of the code that could change its answer."""
    versioned = {**request, "code": _code_version()}
    return hashlib.sha256(json.dumps(versioned, sort_keys=True).encode()).hexdigest()[:32]


@functools.cache
def _code_version() -> str:
    """torch, torchvision and timm versions, and a digest of this package's own files (the
    standard networks are defined there, and change between releases of the same number)."""
    digest = hashlib.sha256(trainyard.__version__.encode())
    for name in ("torch", "torchvision", "timm"):
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            pass
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


_caches: dict[Path | None, NetworkCache] = {}
_caches_lock = threading.Lock()


def network_cache(folder: Path | None) -> NetworkCache:
    """The one cache of a folder in this process (the server's requests share it)."""
    with _caches_lock:
        if folder not in _caches:
            _caches[folder] = NetworkCache(folder)
        return _caches[folder]
