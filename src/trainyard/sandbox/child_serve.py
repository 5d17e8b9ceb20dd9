"""The child's side of sandbox/childproc.py's protocol: confine this process, then answer each
request frame with the handler, in a process forked from the warm zygote (sandbox/zygote.py) or
spawned as ``python -m trainyard.sandbox.child_serve SETUP REQUEST_FD ANSWER_FD``.

Apart from the parent's side so that the zygote, which childproc's `Child` forks from, imports
only this: no circle between the two. Frames are ``TY <id> <length>\\n`` + that many bytes of JSON.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from typing import Any

from trainyard.core.errors import UserError
from trainyard.sandbox import policy as sandbox

STATE_ID = 0  # the frame a child sends once it is ready for requests


def write_frame(fd: int, request_id: int, doc: dict) -> None:
    payload = json.dumps(doc).encode()
    data = b"TY %d %d\n" % (request_id, len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def serve(setup: dict, request_fd: int, answer_fd: int) -> None:
    """Confine this process, then answer request frames with ``setup["handler"]`` until EOF."""
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the user's prints (and C libraries') go to stderr, never into an answer
    sys.stdout = sys.stderr
    os.environ.update(setup.get("env") or {})
    policy = sandbox.Policy.from_json(setup["policy"]) if setup.get("policy") else None
    if setup.get("private_tmp"):  # forked by a checker inside namespaces: its own private /tmp
        scratch = os.environ["TMPDIR"] = tempfile.mkdtemp(prefix=f"child-{os.getpid()}-", dir="/tmp")
        if policy is not None:
            policy.write = [*policy.write, scratch]
    tempfile.tempdir = None  # a warm parent may have settled on /tmp: the scratch folder instead
    # The handler's module is trainyard's (it imports torch): imported before the confinement, as
    # a warm checker's children find it, so that the address-space limit counts from there.
    module, _, name = setup["handler"].partition(":")
    handler = getattr(importlib.import_module(module), name)
    for preloaded in setup.get("preload") or []:  # what a warm checker would have imported
        try:
            importlib.import_module(preloaded)
        except ImportError:
            pass
    if policy is not None:
        sandbox.enter(policy)
    write_frame(answer_fd, STATE_ID, {"state": "started"})
    requests = os.fdopen(request_fd, "rb")
    while True:
        header = requests.readline()
        if not header:
            return
        _, request_id, size = header.split()
        request = json.loads(requests.read(int(size)))
        write_frame(answer_fd, int(request_id), _answer(handler, request))


def out_of_memory(message: str) -> bool:
    """Whether an error's text says the process ran out of memory (Python's, or torch's allocator)."""
    return "MemoryError" in message or "can't allocate memory" in message


def _answer(handler: Any, request: dict) -> dict:
    try:
        return handler(request)
    except UserError as exc:
        return {"error": str(exc), "status": exc.http_status}
    except (MemoryError, RuntimeError) as exc:
        if not isinstance(exc, MemoryError) and not out_of_memory(str(exc)):
            return {"error": f"the network failed: {type(exc).__name__}: {exc}", "status": 422}
        limit = sandbox.memory_limit_mb()
        return {"error": f"the network needs more than the {limit} MiB of memory a sandboxed process may use "
                         "(TRAINYARD_SANDBOX_MEMORY_MB); its process was stopped", "status": 503, "fatal": True}
    except (Exception, SystemExit) as exc:  # the user's code failed: an answer, not a crash
        return {"error": f"the network failed: {type(exc).__name__}: {exc}", "status": 422}


def main(argv: list[str]) -> None:
    setup, request_fd, answer_fd = json.loads(argv[0]), int(argv[1]), int(argv[2])
    serve(setup, request_fd, answer_fd)


if __name__ == "__main__":
    main(sys.argv[1:])
