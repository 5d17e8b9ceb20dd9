"""The sandbox of a local job whose network is user code (sandbox/job.py), decided from the
store's record of the job (jobs/store/confinement.py), never from its folder.

A training job reads its dataset and pretrained file; an inference job (classify-many, evaluate)
of a custom model reads its checkpoint and its images; either writes only its own folder and
reaches TCP only when its processes rendezvous. A cluster job's own process (the launcher) runs
only trainyard's code and needs Ray's session files and TCP: it runs unconfined, and each of its
ranks confines itself on its node (cluster/rank_worker.py), from the record the launcher hands
it (sandbox/recorded.py). A standard network is trainyard's own code and runs as before.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from trainyard.core.paths import JobFolder
from trainyard.jobs.store.confinement import Confinement
from trainyard.sandbox import job as job_confinement
from trainyard.sandbox import policy as sandbox

SUPERVISOR = "trainyard.sandbox.supervisor"  # runs the command under the policy (sandbox/supervisor.py)


def sandboxed(command: list[str], folder: JobFolder, gpu_ids: list[int] | None,
              confinement: Confinement) -> list[str]:
    """``command`` wrapped in the sandbox when the record says the job runs user code;
    PermissionError (the job cannot start) where the kernel offers no sandbox and running
    unconfined is not allowed (it is never run unconfined)."""
    if not confinement.user_code or confinement.on_cluster:
        return command
    try:
        if not sandbox.require():
            return command
    except sandbox.SandboxUnavailable as exc:
        raise PermissionError(str(exc)) from None
    policy = recorded_policy(confinement, folder.path, list(gpu_ids or []))
    job_confinement.prepare_folder(folder.path, policy)
    return [sys.executable, "-m", SUPERVISOR, policy.to_json(), "--", *command]


def recorded_policy(confinement: Confinement, job_dir: Path, gpu_ids: list[int]) -> sandbox.Policy:
    """The training policy (sandbox/job.py) of a job spanning the recorded processes and nodes,
    with the reads the record names: a file read is its folder (a checkpoint's, a pretrained
    file's); a missing one stays as named (the sandbox skips it), never widened to its parent; a
    link (which bwrap would follow) is not bound at all."""
    job = job_confinement.ConfinedJob.model_validate({"processes": confinement.processes,
                                                      "nnodes": confinement.nnodes})
    policy = job_confinement.training_policy(job, job_dir, gpu_ids, os.environ)
    for value in confinement.reads:
        path = Path(value)
        if path.is_symlink() or path.parent.is_symlink():  # a model job may make its checkpoint (or
            continue  # its checkpoints folder) a link to /: bound, the link would open all it names
        policy.read.append(str(path.parent if path.is_file() else path))
    policy.report_dir = str(JobFolder(job_dir).work)  # the supervisor's report: among the job's events
    return policy
