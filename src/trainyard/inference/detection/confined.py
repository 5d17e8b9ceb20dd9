"""Detect for the server and the CLI without running user code in them: a custom detector answers
from its sandboxed model worker (inference/worker_pool.py), as a custom classifier does.

A standard detector's code ships with trainyard and runs in the calling process. A custom one
(its checkpoint holds the user's ``network.py``) is loaded only in a worker, which reads its job
folder and nothing else and gets the images' bytes. Whether a model is custom is what the store
recorded for its job; a checkpoint that claims otherwise is refused (CheckpointClaim, 409).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trainyard.inference.detection.answer import detect_answer
from trainyard.inference.detection.detector import CustomDetector, load_detector
from trainyard.inference.worker_pool import POOL, CheckpointClaim

TASK = "detection"


def detect_checkpoint(path: Path, sources: Sequence[tuple[str, bytes | Path]], *, threshold: float,
                      layers: bool = False, epoch: float | None = None, custom: bool | None = None) -> dict:
    """The detect document of checkpoint ``path`` (detection/answer.py's).

    ``custom``: the store's record of the model's job; None (a checkpoint no job records): the
    checkpoint itself says, read here with custom networks refused."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, TASK)
    if not custom and not (custom is None and POOL.has(key)):
        try:
            loaded = load_detector(path, user_code=False)
        except CustomDetector:
            if custom is False:
                raise CheckpointClaim(f"{path.name} holds a custom network, but its job was recorded with a "
                                      "standard one: refused") from None
        else:
            return detect_answer(loaded, sources, threshold=threshold, layers=layers, epoch=epoch)
    doc = POOL.worker(key, path, TASK).ask(sources, threshold=threshold, layers=layers)
    if custom and doc.get("network") is not None:
        raise CheckpointClaim(f"{path.name} claims the standard network {doc.get('network')}, but its job "
                              "was recorded with a custom one: refused")
    return {**doc, "epoch": epoch}
