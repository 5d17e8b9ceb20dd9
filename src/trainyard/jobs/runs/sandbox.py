"""The sandbox of a local training job whose network is user code (sandbox/job.py).

A cluster job's own process (the launcher) runs only trainyard's code and needs Ray's session
files and TCP: it runs unconfined, and each of its ranks confines itself on its node
(cluster/rank_worker.py). A standard network is trainyard's own code and runs as before.
"""

from __future__ import annotations

from trainyard.core.errors import InvalidInput
from trainyard.core.paths import JobFolder
from trainyard.sandbox import job as job_confinement
from trainyard.sandbox import policy as sandbox


def sandboxed(command: list[str], folder: JobFolder, gpu_ids: list[int] | None) -> list[str]:
    """``command`` wrapped in the sandbox when the job's network is user code; PermissionError
    (the job cannot start) where the kernel offers no sandbox and running unconfined is not
    allowed, or where the spec does not read (it is never run unconfined)."""
    try:
        job = job_confinement.read_spec(folder.path)
        if job.on_cluster:
            return command
        return job_confinement.confined_command(command, folder.path, gpu_ids or [], job=job)
    except (sandbox.SandboxUnavailable, InvalidInput) as exc:
        raise PermissionError(str(exc)) from None
