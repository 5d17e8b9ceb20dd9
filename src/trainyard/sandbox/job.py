"""The sandbox of a training process whose network is user code (a custom network or an imported
one), wherever it starts: a local job (jobs/runs/sandbox.py) or a cluster rank (cluster/rank_worker.py).

Such a process runs as ``python -m trainyard.sandbox.supervisor POLICY -- <its command>``: the
supervisor (sandbox/supervisor.py) forks it into bwrap's namespaces (sandbox/namespaces.py), it
confines itself (sandbox/policy.py) and execs the command. It sees the system's and Python's
folders, its dataset, its pretrained weights and the weights store, read-only; it writes only
its own job folder (and its private /tmp and /dev/shm, where the data loader's workers share
batches; the device nodes of the GPUs it leased); TCP only when it spans processes (their
rendezvous, on its own loopback; a cluster rank keeps its node's network, held to its job's
peers by sandbox/rank_network.py); it
may start processes (the data loader, torch.distributed.run), at most `JOB_PROCESSES`; each
of its processes may take `training_memory_mb` of memory. A standard network is trainyard's
own code and runs as before. Torch-free.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainyard.core.environment import MEMORY_SETTING, sandbox_memory_mb
from trainyard.core.errors import error_chain
from trainyard.core.paths import JobFolder
from trainyard.core.stored import SpecView, read_stored
from trainyard.sandbox import devices, job_bounds, namespaces, rank_network
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox.childproc import out_of_memory

# A job's processes, counted by its supervisor (threads are not counted): a data loader's
# workers (at most one a core), a rank per GPU and theirs; a fork loop is stopped here.
JOB_PROCESSES = max(256, 8 * (os.cpu_count() or 1))
TMP_MB = 4096  # the private /tmp: inductor's and Triton's caches, ptxas's files
SHM_MB = 2048  # the private /dev/shm: a data loader's workers pass batches through it


def prepare_folder(job_dir: Path, policy: sandbox.Policy) -> None:
    """Make the job's work folder (and its scratch, without namespaces) writable by the uid user
    code runs as (sandbox/namespaces.py), before it starts; the rest of the job folder (its spec,
    its output.txt) stays the server's (core/paths.py)."""
    if policy.tmpdir and not policy.tmpdir.startswith("/tmp"):
        Path(policy.tmpdir).mkdir(exist_ok=True)
    folder = JobFolder(job_dir)
    namespaces.give(folder.work, recursive=True, uid=policy.uid)
    if policy.host_network:  # a cluster rank: its fence's folder exists before it is bound (core/fence.py)
        folder.fence.mkdir(mode=0o755, exist_ok=True)


class ConfinedJob(SpecView):
    """What the sandbox needs from a job's spec.json (core/stored.py): whether its network is
    user code, what it reads, and whether it spans processes. Read from the job folder, because
    the cluster rank that confines itself imports only core and has nothing else; any kind's
    spec reads (only a model's names user code)."""

    network_source: str | None = None  # the custom network file's source
    dataset_dir: str | None = None
    pretrained: str | None = None
    processes: int = 1
    nnodes: int = 1
    cluster: dict[str, Any] | None = None  # cluster mode, placed by Ray (cluster/job_spec.py reads it)

    @property
    def is_user_code(self) -> bool:
        """Whether the job's network is user code (its spec carries the network's source)."""
        return bool(self.network_source)

    @property
    def on_cluster(self) -> bool:
        return self.cluster is not None

    def spans_processes(self, gpus: int) -> bool:
        """Whether its processes meet over TCP (a rendezvous): several GPUs, processes or nodes."""
        return gpus > 1 or self.processes > 1 or self.nnodes > 1 or self.on_cluster


def read_spec(job_dir: str | os.PathLike) -> ConfinedJob:
    """The job's spec.json as the sandbox reads it; a job without a readable one runs no user
    code. One that is JSON but not a spec (a wrong type) raises InvalidInput: never unconfined."""
    try:  # no link, no FIFO: before the split the job could write its spec (core/jobfiles.py)
        data = JobFolder(job_dir).read_spec()
    except (OSError, ValueError):
        return ConfinedJob()
    return read_stored(ConfinedJob, data, what=f"job spec in {job_dir}") if isinstance(data, dict) else ConfinedJob()


def confined_command(command: list[str], job_dir: str | os.PathLike, gpu_ids: list[int] | list[str],
                     env: dict[str, str] | None = None, job: ConfinedJob | None = None) -> list[str]:
    """``command`` under the supervisor and in the sandbox when the job's network is user code;
    unchanged otherwise, and where the kernel has no sandbox but running unconfined was allowed.
    Raises `sandbox.SandboxUnavailable` where it has none and that was not allowed. The
    supervisor reports a breach of the limits to the job folder (sandbox/supervisor.py). ``env``:
    the environment the command gets (its TRAINYARD_SANDBOX_MEMORY_MB), else this process's;
    ``job``: the job's spec as `read_spec` gave it, when the caller has read it already."""
    job = job or read_spec(job_dir)
    if not job.is_user_code or not sandbox.require():
        return command
    policy = training_policy(job, Path(job_dir), list(gpu_ids), os.environ if env is None else env)
    policy.report_dir = str(JobFolder(job_dir).work)
    prepare_folder(Path(job_dir), policy)
    return [sys.executable, "-m", "trainyard.sandbox.supervisor", policy.to_json(), "--", *command]


def training_policy(job: ConfinedJob, job_dir: Path, gpus: int | Sequence[int | str],
                    env: Mapping[str, str]) -> sandbox.Policy:
    """What a training process running user code may do. ``gpus``: its leased GPUs' indices (or
    their count, where they do not matter): it gets their device nodes only (sandbox/devices.py).
    Its scratch: the namespaces' private /tmp, or (Landlock alone) the work folder's ``tmp``,
    so that inductor, Triton and ptxas can compile in either. It writes its work folder only and
    reads its spec, and a cluster rank its fence (core/paths.py: the rest of ``job_dir`` is the server's)."""
    gpu_ids = list(range(gpus)) if isinstance(gpus, int) else list(gpus)
    folder = JobFolder(job_dir)
    home = job_dir.resolve().parent.parent  # HOME/jobs/<id>
    read = [str(home / "weights"), str(folder.spec)]
    for value in (job.dataset_dir, job.pretrained):
        # a link (a model job's checkpoint made one to /) is never bound: bwrap would follow it
        if value and not (Path(value).is_symlink() or Path(value).parent.is_symlink()):
            path = Path(value)
            read.append(str(path if path.is_dir() else path.parent))
    nodes, libraries = devices.gpu_access(gpu_ids)
    tmpdir = "/tmp" if namespaces.available() else str(folder.work / "tmp")
    policy = sandbox.Policy(read=[*read, *libraries], write=[str(folder.work), "/dev/shm"], devices=nodes,
                            network=job.spans_processes(len(gpu_ids)), host_network=job.nnodes > 1 or job.on_cluster,
                            processes=True, open_files=65536, memory_mb=training_memory_mb(bool(gpu_ids), env),
                            max_processes=JOB_PROCESSES, hidden=[str(home)], tmpdir=tmpdir, cwd=str(folder.work),
                            tmp_mb=TMP_MB, shm_mb=SHM_MB)
    # its work folder bounded below the disk, and no one file past that between two scans
    policy.work_mb = policy.file_size_mb = job_bounds.work_limit_mb(folder.work, env)
    if policy.host_network:  # a cluster rank on its node's network: held to its job's peers
        policy.read.append(str(folder.fence))  # read-only: the launcher and server write it (core/fence.py)
        policy.peers = [p for p in env.get(rank_network.PEERS_VARIABLE, "").split(",") if p]
        if os.geteuid() == 0 and namespaces.available():  # a uid its node's nftables tell apart
            policy.uid = rank_network.job_uid(folder.path.name)
    return policy


def training_memory_mb(gpu: bool, env: Mapping[str, str]) -> int | None:
    """The memory (RLIMIT_DATA) each process of a training job may take: TRAINYARD_SANDBOX_MEMORY_MB
    when set; else three quarters of the machine's memory, and at least 4 GiB, for a CPU job.

    RLIMIT_DATA counts private writable memory (malloc, torch's CPU tensors), not the address
    space CUDA reserves; but a GPU job's pinned host buffers and driver mappings were not
    measured against it on a GPU machine, so a GPU job gets a limit only when one was set."""
    if gpu and not env.get(MEMORY_SETTING):
        return None
    return sandbox_memory_mb(0.75, env)


def out_of_memory_message(error: BaseException) -> str | None:
    """The user's one line when ``error`` (or what caused it) is this process running out of
    the memory its sandbox gives it; None when it is not, or when this process has no limit."""
    limit = sandbox.memory_limit_mb()
    if limit is None:
        return None
    if any(isinstance(e, MemoryError) or out_of_memory(str(e)) for e in error_chain(error)):
        return (f"the network used more than {limit / 1024:.3g} GiB of memory, the most a training process "
                f"running user code may take ({MEMORY_SETTING})")
    return None
