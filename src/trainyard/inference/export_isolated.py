"""Export a model's archive in a child process, for the server.

Exporting builds the network, which for a custom network runs the user's source: the server
never does that itself. ``export_in_child`` runs ``python -m trainyard.inference.export_isolated``
(its own process group, no secrets in its environment, no GPU) with a time limit, and reads
back one JSON line: ``{"ok": true}`` or ``{"error": message, "status": code}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from trainyard.core.environment import kill_group
from trainyard.inference.workers import WorkerError, WorkerUnavailable, worker_env

EXPORT_TIMEOUT_S = 600.0  # a GoogLeNet ONNX export and its check on a busy CPU


def export_in_child(job_dir: str | os.PathLike, epoch: float, output: str | os.PathLike,
                    timeout: float = EXPORT_TIMEOUT_S) -> None:
    """Write the archive of ``epoch`` to ``output`` from a child process; raise what it reports."""
    request = json.dumps({"job_dir": str(job_dir), "epoch": epoch, "output": str(output)})
    proc = subprocess.Popen([sys.executable, "-m", "trainyard.inference.export_isolated"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=worker_env(), start_new_session=True, text=True)
    try:
        stdout, stderr = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise WorkerUnavailable(f"the export did not finish within {timeout:g} s and was stopped") from None
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = None
    if not isinstance(doc, dict):
        tail = stderr.strip().splitlines()[-1:] or [""]
        raise WorkerUnavailable(f"the export process exited (code {proc.returncode}) without "
                                f"an answer: {tail[0][:300]}")
    if not doc.get("ok"):
        raise WorkerError(str(doc.get("error")), int(doc.get("status", 422)))


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the user's prints (and C libraries') go to stderr, not into the answer
    sys.stdout = sys.stderr
    try:
        from trainyard.core.errors import UserError
        from trainyard.inference.export import export_model

        request = json.loads(sys.stdin.read())
        export_model(Path(request["job_dir"]), request["epoch"], Path(request["output"]))
        doc: dict = {"ok": True}
    except UserError as exc:
        doc = {"error": str(exc), "status": exc.http_status}
    except (Exception, SystemExit) as exc:  # the user's network failed while being built or run
        doc = {"error": f"the network cannot be exported: {type(exc).__name__}: {exc}", "status": 422}
    answers.write(json.dumps(doc) + "\n")
    answers.flush()


if __name__ == "__main__":
    main()
