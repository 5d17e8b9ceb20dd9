"""The environment handed to processes the server starts (its secrets stay behind), their end, and
the one place besides settings.py that reads the environment.

Jobs, network checks and model workers run user code (custom networks, imported archives);
none of them needs the server's access token, so none of them gets it. Such a child starts its
own session, so `kill_group` can stop everything the user's code started along with it.

The named readers below are for what is not a setting a person chooses but a protocol, which the
environment is the only way to receive (tests/test_environment_reads.py holds every other module
to none):

- what a launcher or library says to this process: torch.distributed.run's and our launcher's
  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT and TORCHELASTIC_RUN_ID,
  CUDA_VISIBLE_DEVICES, RAY_ADDRESS, HF_ENDPOINT, XDG_CACHE_HOME, PYTHONPATH, OMP_NUM_THREADS;
- what a trainyard process hands the child it starts: the GPUs leased to it, the attempt fence
  of a cluster rank, the socket a rank locks its network through, the pipe holding the token;
- the sandbox's settings, in the sandbox's own processes (a supervisor, a confined child): they
  are declared, typed and validated in settings.py's ProcessSettings like every setting, but a
  sandbox process must not import pydantic (a second more for each one started), so it reads
  them here, parsed as ProcessSettings parses them (tests/core/test_environment_settings.py
  holds the two to the same defaults).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from trainyard.core.vocabulary import LEASED_GPUS  # the lease indices of the real GPUs a job process holds

SECRET_VARIABLES = ("TRAINYARD_AUTH_TOKEN",)
TOKEN_FD_VARIABLE = "TRAINYARD_TOKEN_FD"  # the pipe a re-executed server reads its token from (web/token_handoff.py)
RANK_LOCK_FD_VARIABLE = "TRAINYARD_RANK_LOCK_FD"  # a rank's end of the socket to its supervisor
RANK_CPUS_VARIABLE = "TRAINYARD_RANK_CPUS"  # the CPUs Ray assigned a rank's worker (a number)
FENCE_VARIABLE = "TRAINYARD_FENCE"  # a cluster rank's "LAUNCH/ATTEMPT": the attempt it belongs to
# A yes-or-no setting's words, any case, as pydantic reads a bool (ProcessSettings)
OFF_WORDS = ("0", "off", "f", "false", "n", "no")
ON_WORDS = ("1", "on", "t", "true", "y", "yes")
MEMORY_SETTING = "TRAINYARD_SANDBOX_MEMORY_MB"  # the most memory a process running user code may take


def sandbox_memory_mb(share: float, env: Mapping[str, str] = os.environ) -> int:
    """TRAINYARD_SANDBOX_MEMORY_MB when set; else ``share`` of the machine's memory, and at least
    4 GiB (the largest timm models build in it)."""
    if (given := memory_setting_mb(env)) is not None:
        return given
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    except (ValueError, OSError):
        total = 8192
    return max(4096, int(total * share))


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the secret variables, plus ``overrides``."""
    env = {key: value for key, value in os.environ.items() if key not in SECRET_VARIABLES}
    env.update(overrides)
    return env


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group ``proc`` leads (started with ``start_new_session``) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone (some systems answer EPERM then)
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipes
        pass


def die_with_parent(parent_pid: int | None = None, code: int = 1) -> None:
    """Have the kernel SIGKILL this process when its parent dies, even by ``kill -9``: a decode
    worker or a training rank left running after its job process or launcher would hold memory,
    or a GPU, for good. Linux only (elsewhere the parent's pipes end its children when it exits
    normally). Exits at once with ``code`` if the parent (``parent_pid``, else any but init) is
    already gone, as it may have died before the signal was armed."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = os.getppid()
    if (parent != parent_pid) if parent_pid is not None else (parent == 1 and not _sandbox_init()):
        os._exit(code)


def _sandbox_init() -> bool:
    """Whether pid 1 is bubblewrap's init: inside a sandbox's own PID namespace (sandbox/namespaces.py)
    it is every process's parent by right, and dies with the sandbox (bwrap --die-with-parent)."""
    try:
        with open("/proc/1/comm") as f:
            return f.read().strip() == "bwrap"
    except OSError:
        return False


# --- What a launcher or a library says to this process --------------------------------------

def _number(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def torch_rank() -> int:
    """RANK: this process's global rank, set by torch.distributed.run or our launcher; 0 alone."""
    return _number("RANK", 0)


def world_size() -> int:
    """WORLD_SIZE: how many processes the job has; 1 alone."""
    return _number("WORLD_SIZE", 1)


def local_rank() -> int:
    """LOCAL_RANK: this process's rank among those on its machine."""
    return _number("LOCAL_RANK", 0)


def local_world_size() -> int:
    """LOCAL_WORLD_SIZE: how many of the job's processes run on this machine."""
    return _number("LOCAL_WORLD_SIZE", 1)


def launched_as_rank() -> bool:
    """Whether a launcher started this process as a rank of a job (it set RANK and WORLD_SIZE)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def under_torchelastic() -> bool:
    """Whether torch.distributed.run (an elastic agent) started this process."""
    return "TORCHELASTIC_RUN_ID" in os.environ


def rendezvous() -> str:
    """MASTER_ADDR:MASTER_PORT, where the ranks meet ("?" for a part not given), for messages."""
    return f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"


def cuda_visible_devices() -> str | None:
    """CUDA_VISIBLE_DEVICES as given; None when unset (every device visible)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def omp_num_threads() -> str | None:
    """OMP_NUM_THREADS as given; None when unset."""
    return os.environ.get("OMP_NUM_THREADS")


def python_path() -> list[str]:
    """PYTHONPATH's entries (one empty entry when unset, as str.split gives)."""
    return os.environ.get("PYTHONPATH", "").split(os.pathsep)


def cache_home() -> Path:
    """XDG_CACHE_HOME, else ~/.cache: where libraries keep what they download."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def hf_endpoint() -> str | None:
    """HF_ENDPOINT: the Hugging Face Hub mirror huggingface_hub itself uses; None for the Hub."""
    return os.environ.get("HF_ENDPOINT") or None


def ray_address() -> str:
    """RAY_ADDRESS (stripped): the Ray cluster to join; "" when none is given."""
    return os.environ.get("RAY_ADDRESS", "").strip()


def present(names: Iterable[str], non_empty: bool = False) -> Iterator[tuple[str, str]]:
    """(name, value) of each variable of ``names`` this process has (with ``non_empty``, only those
    with a value), to hand on to a process it starts elsewhere (a Ray actor does not inherit them)."""
    return ((name, os.environ[name]) for name in names if name in os.environ and (os.environ[name] or not non_empty))


# --- What a trainyard process hands the child it starts ---------------------------------------

def leased_gpus() -> list[str]:
    """The lease indices of the real GPUs the runner gave this process; [] for none."""
    return [part for part in os.environ.get(LEASED_GPUS, "").split(",") if part.strip()]


def rank_cpus_given() -> bool:
    """Whether Ray's launcher told this rank how many CPUs it was assigned."""
    return RANK_CPUS_VARIABLE in os.environ


def attempt_fence() -> str | None:
    """The cluster attempt this rank belongs to ("LAUNCH/ATTEMPT"); None for a local job."""
    return os.environ.get(FENCE_VARIABLE) or None


def rank_lock_fd() -> str | None:
    """The rank's end of the socket to its supervisor, as handed on; None when none is."""
    return os.environ.get(RANK_LOCK_FD_VARIABLE)


def take_rank_lock_fd() -> str | None:
    """`rank_lock_fd`, removed from the environment so that no later child inherits it."""
    return os.environ.pop(RANK_LOCK_FD_VARIABLE, None)


def take_token_fd() -> str | None:
    """The token pipe's read end a re-executed server was handed, removed from the environment."""
    return os.environ.pop(TOKEN_FD_VARIABLE, None)


def take_auth_token() -> str:
    """TRAINYARD_AUTH_TOKEN from the exec-time environment, removed so nothing started inherits it
    (web/token_handoff.py: the server's Settings read it from the pipe after a re-exec)."""
    return os.environ.pop(SECRET_VARIABLES[0], None) or ""


# --- The sandbox's settings, in the sandbox's own processes (settings.ProcessSettings) --------

def _setting(name: str) -> str:
    return os.environ.get(f"TRAINYARD_{name.upper()}", "")


def sandbox_namespaces_on() -> bool:
    """ProcessSettings.sandbox_namespaces: on unless a word for no (OFF_WORDS)."""
    return _setting("sandbox_namespaces").strip().lower() not in OFF_WORDS


def sandbox_cgroups_on() -> bool:
    """ProcessSettings.sandbox_cgroups: on unless a word for no (OFF_WORDS)."""
    return _setting("sandbox_cgroups").strip().lower() not in OFF_WORDS


def unsandboxed_allowed() -> bool:
    """ProcessSettings.allow_unsandboxed: off unless a word for yes (ON_WORDS)."""
    return _setting("allow_unsandboxed").strip().lower() in ON_WORDS


def sandbox_uid() -> int | None:
    """ProcessSettings.sandbox_uid; None when not set."""
    return int(value) if (value := _setting("sandbox_uid")) else None


def rank_uid_base(default: int) -> int:
    """ProcessSettings.rank_uid_base; ``default`` when not set."""
    return int(_setting("rank_uid_base") or default)


def join_timeout_s(default: float) -> float:
    """ProcessSettings.join_timeout_s; ``default`` when not set."""
    return float(_setting("join_timeout_s") or default)


def trainyard_home() -> str:
    """ProcessSettings.home (TRAINYARD_HOME, else ~/.trainyard) as a real path."""
    return os.path.realpath(_setting("home") or os.path.expanduser("~/.trainyard"))


def memory_setting_mb(env: Mapping[str, str] = os.environ) -> int | None:
    """TRAINYARD_SANDBOX_MEMORY_MB in ``env`` (a person's setting, or the limit a parent gave its
    confined child); None when not set or not a number."""
    value = env.get(MEMORY_SETTING, "")
    return int(value) if value.isdigit() else None
