"""One rank of a cluster job on its node: a Ray actor that runs the training entry point as its
child process, checks storage, and reports where it runs and what its process uses. A rank
of a job whose network is user code runs in the sandbox, under its supervisor
(sandbox/job.py).

A plain class: the launcher makes it a Ray actor (``ray.remote(RankWorker)``), and tests can use
it directly. Ray runs a default actor's methods one at a time on the worker's main thread, so
the child outlives every call; the child ends with the actor (PR_SET_PDEATHSIG, set by run.py
when TORCHELASTIC_RUN_ID is in its environment), so a killed actor or a lost node never
leaves a training process behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from trainyard.core import environment
from trainyard.core.interfaces import interface_of
from trainyard.core.paths import JobFolder
from trainyard.core.rank_threads import RANK_CPUS_ENV
from trainyard.sandbox.job import confined_command
from trainyard.sandbox.recorded import confined_job


class RankWorker:
    def __init__(self) -> None:
        self.child: subprocess.Popen | None = None
        self.group = False  # the child leads a process group of its own (a confined rank)
        self.gpu_ids: list[str] = []
        self.cpus: float | None = None  # the CPUs Ray assigned this actor: its rank's threads
        self._procs: dict[int, psutil.Process] = {}  # kept, so cpu_percent measures between calls

    @staticmethod
    def take_niceness(niceness: int) -> int:
        """This actor at ``niceness`` (the launcher's) instead of Ray's worker niceness, every
        thread of it (Linux sets niceness per thread, and Ray's own threads answer the launcher's
        polls); the niceness it runs at after, Ray's where this node does not allow it."""
        return renice_threads(niceness)

    def where(self) -> dict:
        """This actor's node id, IP address, host name and GPU ids (physical, on its node)."""
        import ray

        context = ray.get_runtime_context()
        self.gpu_ids = [str(g) for g in ray.get_gpu_ids()]
        self.cpus = context.get_assigned_resources().get("CPU")
        host = ray.util.get_node_ip_address()
        return {"node_id": context.get_node_id(), "host": host, "hostname": socket.gethostname(),
                "gpu_ids": self.gpu_ids, "interface": interface_of(host)}

    @staticmethod
    def free_port() -> int:
        """A free TCP port on this node, for the rendezvous when this actor is rank 0."""
        with socket.socket() as s:
            s.bind(("", 0))
            return s.getsockname()[1]

    @staticmethod
    def check_storage(dataset_dir: str, job_dir: str) -> str | None:
        """None if this node can read the dataset and write the job's work folder; else what fails."""
        try:
            (Path(dataset_dir) / "info.json").read_bytes()
            for path in (Path(dataset_dir) / "train").iterdir():
                with open(path, "rb") as f:
                    f.read(1)
        except OSError as exc:
            return f"cannot read the dataset {dataset_dir} ({exc.strerror or exc})"
        probe = JobFolder(job_dir).work / f".write-check-{socket.gethostname()}-{os.getpid()}"
        try:
            probe.write_bytes(b"ok")
            probe.unlink()
        except OSError as exc:
            return f"cannot write the job folder {job_dir} ({exc.strerror or exc})"
        return None

    def start(self, command: list[str], env: dict[str, str], cwd: str, output: str,
              niceness: int | None = None) -> dict:
        """Start the training process (``command``, with ``env`` over this actor's environment)
        at ``niceness`` if this node lets us; its pid and the niceness it runs at."""
        if command and command[0] == "python":
            # this node's interpreter (the cluster's venv); -P: never the job folder (its cwd, which
            # user code writes) first on sys.path, where a planted module would shadow ours
            command = [sys.executable, "-P", *command[1:]]
        # A rank runs the job's network: user code, when it is custom, confined on this node as a
        # local job is (SandboxUnavailable, said by the launcher, where this node has no sandbox).
        environment = child_environment(env)
        if self.cpus:
            environment[RANK_CPUS_ENV] = str(self.cpus)
        # Confined as the server recorded the job, not as its spec.json (which its ranks write) says.
        confined = confined_command(command, cwd, self.gpu_ids, env=environment, job=confined_job(env))
        # Its own process group, so that `stop` reaches the training process past its supervisor
        # (which waits for it); it still dies with this actor (PR_SET_PDEATHSIG).
        self.group = confined is not command
        with open(output, "ab") as out:
            self.child = subprocess.Popen(confined, cwd=cwd, env=environment, stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=subprocess.STDOUT, start_new_session=self.group,
                                          preexec_fn=None if niceness is None else lambda: set_niceness(niceness))
        try:
            actual = psutil.Process(self.child.pid).nice()
        except psutil.Error:
            actual = None
        return {"pid": self.child.pid, "niceness": actual}

    def poll(self) -> int | None:
        """The training process's exit code (negative: killed by that signal), None while it runs."""
        return self.child.poll() if self.child else None

    def stop(self) -> None:
        """SIGTERM the process (abort: the ranks agree to stop at a step boundary); killing is
        ray.kill's, on the actor, which the process dies with."""
        if self.child is not None and self.child.poll() is None:
            if self.group:
                os.killpg(self.child.pid, signal.SIGTERM)
            else:
                self.child.send_signal(signal.SIGTERM)

    def figures(self) -> dict:
        """CPU percent and memory of the training process tree, and its GPUs' NVML readings."""
        return {"cpu": self._cpu(), "gpus": read_gpus(self.gpu_ids)}

    def _cpu(self) -> dict | None:
        if self.child is None or self.child.poll() is not None:
            return None
        try:
            tree = [psutil.Process(self.child.pid)]
            tree += tree[0].children(recursive=True)
        except psutil.Error:
            return None
        percent, rss = 0.0, 0
        for proc in tree:
            proc = self._procs.setdefault(proc.pid, proc)
            try:
                percent += proc.cpu_percent(interval=None)
                rss += proc.memory_info().rss
            except psutil.Error:
                continue
        return {"percent": round(percent, 1), "rss": rss, "processes": len(tree),
                "cores": psutil.cpu_count()}


# Ray gives its workers an OMP_NUM_THREADS of their own (the actor's one CPU); a rank takes the
# launcher's instead (in ``env``) or none, as a local job's process does.
RAY_ONLY = ("OMP_NUM_THREADS",)


def child_environment(env: dict[str, str]) -> dict[str, str]:
    """This actor's environment under ``env``; Ray's own thread count left out, and gloo's and
    NCCL's interface left as the node's operator set them, where they did."""
    out = {k: v for k, v in os.environ.items() if k not in RAY_ONLY}
    operators = {name for name, _ in environment.present(("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"), non_empty=True)}
    for key, value in env.items():
        if key in operators:
            continue
        out[key] = value
    return out


def set_niceness(niceness: int) -> None:
    """In the child before exec: the launcher's niceness instead of Ray's worker niceness (15).
    Lowering it needs CAP_SYS_NICE (root) or a RLIMIT_NICE that allows it; without, the child
    keeps Ray's (the launcher logs it; RAY_worker_niceness=0 on `ray start` avoids it)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    except OSError:
        pass


def renice_threads(niceness: int) -> int:
    """Every thread of this process at ``niceness`` where allowed (set_niceness's rule); the
    calling thread's niceness after. Ray set its worker's niceness after starting some of its
    threads, so the threads differ: each is set (a thread id is a PRIO_PROCESS "who" on Linux)."""
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: the calling thread alone
        threads = [0]
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
        except OSError:
            pass  # not allowed here, or the thread ended meanwhile
    return os.getpriority(os.PRIO_PROCESS, 0)


def read_gpus(gpu_ids: list[str]) -> list[dict]:
    """NVML readings of this node's GPUs ``gpu_ids``; [] where NVML is missing or fails."""
    if not gpu_ids:
        return []
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    out = []
    try:
        for gpu in gpu_ids:
            out.append(_read_gpu(pynvml, int(gpu)))
    except Exception:
        pass  # a board that cannot be read: report what was read
    finally:
        pynvml.nvmlShutdown()
    return out


def _read_gpu(nvml, index: int) -> dict:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    name = nvml.nvmlDeviceGetName(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    doc = {"index": index, "name": name.decode() if isinstance(name, bytes) else name,
           "memory_used": int(memory.used), "memory_total": int(memory.total),
           "utilization": None, "temperature": None}
    try:
        doc["utilization"] = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        doc["temperature"] = int(nvml.nvmlDeviceGetTemperature(handle, 0))
    except Exception:
        pass  # not supported on this board or in this VM
    return doc
