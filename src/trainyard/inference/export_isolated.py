"""Export a model's archive in a sandboxed child process, for the server.

Exporting builds the network, which for a custom network runs the user's source: the server
never does that itself. ``export_in_child`` asks a sandbox/childproc.py child (forked from the warm
checker; no secrets, no GPU, it reads its job folder and writes only its scratch folder) to
write the archive, with a time limit, and moves the archive into place itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from trainyard.core.paths import JobFolder
from trainyard.inference.worker_pool import START_TIMEOUT_S, WorkerError, WorkerUnavailable
from trainyard.networks.isolated import CHECKER
from trainyard.sandbox.childproc import Child, ChildFailed, default_policy
from trainyard.sandbox.job import read_spec

EXPORT_TIMEOUT_S = 600.0  # a GoogLeNet ONNX export and its check on a busy CPU


def export_in_child(job_dir: str | os.PathLike, epoch: float, output: str | os.PathLike,
                    timeout: float = EXPORT_TIMEOUT_S, force: bool = False) -> None:
    """Write the archive of ``epoch`` to ``output`` from a child process; raise what it reports."""
    try:
        policy = default_policy(read=readable(Path(job_dir)), hidden=[str(Path(job_dir).parent.parent)])  # HOME
        child = Child("trainyard.inference.export_isolated:handle", policy,
                      what="the export", start_timeout=START_TIMEOUT_S, zygote=CHECKER)
    except ChildFailed as exc:
        raise WorkerUnavailable(str(exc)) from None
    try:
        archive = Path(child.scratch) / "archive.tar.gz"
        request = {"job_dir": str(job_dir), "epoch": epoch, "output": str(archive), "force": force}
        try:
            doc = child.ask(request, timeout, 4096, "write the archive")
        except ChildFailed as exc:
            raise WorkerUnavailable(str(exc)) from None
        if not doc.get("ok"):
            raise WorkerError(str(doc.get("error")), int(doc.get("status", 422)))
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        temp = Path(output).with_name(f".{Path(output).name}.{os.getpid()}.tmp")
        shutil.move(archive, temp)
        temp.replace(output)
    finally:
        child.stop()


def readable(job_dir: Path) -> list[str]:
    """The job's work folder (core/paths.py: its checkpoints), and its dataset's info.json (the
    archive names the dataset): one file of the jobs folder, whatever a job may have written."""
    folder = JobFolder(job_dir)
    paths = [str(folder.work)]
    try:
        dataset = read_spec(folder.path).dataset_dir  # the sandbox's typed view of it
        if not dataset:
            return paths
        info = (Path(dataset) / "info.json").resolve()
    except (OSError, ValueError, TypeError, AttributeError):
        return paths
    if info.is_relative_to(job_dir.resolve().parent) and info.is_file():
        paths.append(str(info))
    return paths


def handle(request: dict) -> dict:
    """The export, in the child (childproc's handler)."""
    from trainyard.core.errors import UserError
    from trainyard.inference.export import export_model

    try:
        export_model(Path(request["job_dir"]), request["epoch"], Path(request["output"]), bool(request.get("force")))
    except UserError:
        raise
    except (Exception, SystemExit) as exc:  # the user's network failed while being built or run
        return {"error": f"the network cannot be exported: {type(exc).__name__}: {exc}", "status": 422}
    return {"ok": True}
