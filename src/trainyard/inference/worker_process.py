"""A model worker's side: the sandboxed process that builds and runs one custom network for the server.

It is a sandbox/childproc.py child (forked from the warm checker, or spawned) whose handler is
`handle`. Its requests, one JSON document each (nothing this process writes is unpickled by the
server, and the protocol keeps the user's prints out of the answers):

    {"load": CHECKPOINT}                          -> {"state": "ready"} or {"error", "status"}
    {"images": [[name, {"data": base64}], ...],   -> {"answer": {...}} (responses.answer's document)
     "top": 5, "layers": false, "saliency": false}   or {"error": message, "status": code}

A detector's worker is loaded with ``{"load": CHECKPOINT, "task": "detection"}`` and answers
``{"images": [...], "threshold": 0.5, "layers": false}`` with detection/answer.py's document.

The server sends the images' bytes, not paths: the sandbox lets this process read its job
folder and nothing of the server's data.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from trainyard.core.tasks import task_traits

_loaded: Any = None  # the LoadedModel this worker serves (one per process)


def handle(request: dict) -> dict:
    """Load the checkpoint, or answer one classify request with it."""
    global _loaded
    if "load" in request:
        from trainyard.inference import ort_runtime
        from trainyard.inference.loader import load_model

        checkpoint = Path(request["load"])
        if task_traits(request.get("task")).boxes:
            from trainyard.inference.detection.detector import load_detector

            _loaded = load_detector(checkpoint)
            return {"state": "ready"}
        if not ort_runtime.is_cached(checkpoint):  # torch is needed: import it within the load time
            import trainyard.inference.torch_forward  # noqa: F401
        _loaded = load_model(checkpoint)
        return {"state": "ready"}
    from trainyard.inference.responses import answer

    if _loaded is None:
        return {"error": "the worker has no network loaded", "status": 503}
    sources = [(str(name), base64.b64decode(src["data"])) for name, src in request["images"]]
    if "threshold" in request:
        from trainyard.inference.detection.answer import detect_answer

        return {"answer": detect_answer(_loaded, sources, threshold=float(request["threshold"]),
                                        layers=bool(request.get("layers")))}
    doc = answer(_loaded, sources, top=int(request.get("top", 5)), layers=bool(request.get("layers")),
                 saliency=bool(request.get("saliency")))
    return {"answer": doc}
