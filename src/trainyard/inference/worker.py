"""A model worker: the process that builds and runs one custom network for the server.

``python -m trainyard.inference.worker CHECKPOINT`` loads the checkpoint (running the network's
user source, which the server never does), then answers classify requests until stdin closes.
The conversation is one JSON object a line, so the server never unpickles anything this process
(and the user's code in it) writes:

    worker -> server   {"state": "started"}                 torch is imported
                       {"state": "ready"}                   the network is built
                       {"error": message, "status": code}   it could not be
    server -> worker   {"images": [[name, {"data": base64} | {"path": p}], ...],
                        "top": 5, "layers": false, "saliency": false}
    worker -> server   {"answer": {...}} (responses.answer's document) or {"error": ..., "status": ...}

Anything the user's code prints goes to stderr, so it cannot forge an answer line.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import TextIO


def _error(exc: BaseException) -> dict:
    from trainyard.core.errors import UserError

    if isinstance(exc, UserError):
        return {"error": str(exc), "status": exc.http_status}
    # Anything else came from the user's network (or is a defect): the request cannot be served.
    return {"error": f"the network failed: {type(exc).__name__}: {exc}", "status": 422}


def _sources(images: list) -> list[tuple[str, bytes | Path]]:
    return [(str(name), base64.b64decode(src["data"]) if "data" in src else Path(src["path"]))
            for name, src in images]


def serve(checkpoint: str, requests: TextIO, answers: TextIO) -> None:
    """Load ``checkpoint``, then answer each request line until ``requests`` ends."""
    def send(doc: dict) -> None:
        answers.write(json.dumps(doc) + "\n")
        answers.flush()

    from trainyard.inference import ort_runtime
    from trainyard.inference.loader import load_model
    from trainyard.inference.responses import answer

    if not ort_runtime.is_cached(Path(checkpoint)):  # torch is needed: import it within the start time
        import trainyard.inference.torch_forward  # noqa: F401
    send({"state": "started"})
    try:
        loaded = load_model(checkpoint)
    except (Exception, SystemExit) as exc:  # SystemExit: exit() in user code is an answer too
        send(_error(exc))
        return
    send({"state": "ready"})
    for line in requests:
        try:
            request = json.loads(line)
            doc = answer(loaded, _sources(request["images"]), top=int(request.get("top", 5)),
                         layers=bool(request.get("layers")), saliency=bool(request.get("saliency")))
            send({"answer": doc})
        except (Exception, SystemExit) as exc:
            send(_error(exc))


def main() -> None:
    # Answers leave on a private copy of stdout; fd 1 and sys.stdout then point at stderr, so
    # neither the user's print() nor a C library's output can end up in an answer.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.argv[1], sys.stdin, answers)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.inference.worker CHECKPOINT")
    main()
