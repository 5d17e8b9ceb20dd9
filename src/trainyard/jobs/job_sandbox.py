"""The sandbox of a training job whose network is user code (a custom network or an imported one).

Such a job runs as ``python -m trainyard.core.sandbox POLICY -- <its command>`` (core/sandbox.py
confines it, then execs the command: the same pid, so the runner's bookkeeping is unchanged).
It reads the system's and Python's folders, its dataset, its pretrained weights and the weights
store; it writes only its own job folder (and /dev/shm, where the data loader's workers share
batches, and the GPU device files it leased); it reaches TCP only when it spans processes (their
rendezvous); it may start processes (the data loader, torch.distributed.run). A standard network
is trainyard's own code and runs as before.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

from trainyard.core import sandbox
from trainyard.core.errors import InvalidInput
from trainyard.core.files import read_json
from trainyard.core.paths import JobFolder
from trainyard.training.spec import ModelSpec, stored_spec


def sandboxed(command: list[str], folder: JobFolder, gpu_ids: list[int] | None) -> list[str]:
    """``command`` wrapped in the sandbox when the job's network is user code; PermissionError
    (the job cannot start) where the kernel offers no sandbox and running unconfined is not allowed."""
    try:  # every kind's job starts here; only a model job's spec reads as a ModelSpec
        spec = stored_spec(read_json(folder.spec))
    except (OSError, ValueError, InvalidInput):
        return command
    if not spec.network_source:
        return command
    try:
        if not sandbox.require():
            return command  # TRAINYARD_ALLOW_UNSANDBOXED=1 on a kernel without Landlock
    except sandbox.SandboxUnavailable as exc:
        raise PermissionError(str(exc)) from None
    policy = training_policy(spec, folder, gpu_ids or [])
    return [sys.executable, "-m", "trainyard.core.sandbox", policy.to_json(), "--", *command]


def training_policy(spec: ModelSpec, folder: JobFolder, gpu_ids: list[int]) -> sandbox.Policy:
    home = folder.path.resolve().parent.parent  # HOME/jobs/<id>
    read = [str(home / "weights")]
    for value in (spec.dataset_dir, spec.pretrained):
        if value:
            path = Path(value)
            read.append(str(path if path.is_dir() else path.parent))
    write = [str(folder.path), "/dev/shm"]
    if gpu_ids:
        write += glob.glob("/dev/nvidia*")  # opened read-write, then driven by ioctl
    spans = len(gpu_ids) > 1 or spec.processes > 1 or spec.nnodes > 1
    return sandbox.Policy(read=read, write=write, network=spans, processes=True, open_files=65536,
                          hidden=[str(home)])
