"""The environment handed to processes the server starts (its secrets stay behind), and their end.

Jobs, network checks and model workers run user code (custom networks, imported archives);
none of them needs the server's access token, so none of them gets it. Such a child starts its
own session, so `kill_group` can stop everything the user's code started along with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping

SECRET_VARIABLES = ("TRAINYARD_AUTH_TOKEN",)
MEMORY_SETTING = "TRAINYARD_SANDBOX_MEMORY_MB"  # the most memory a process running user code may take


def sandbox_memory_mb(share: float, env: Mapping[str, str] = os.environ) -> int:
    """TRAINYARD_SANDBOX_MEMORY_MB when set; else ``share`` of the machine's memory, and at least
    4 GiB (the largest timm models build in it)."""
    if env.get(MEMORY_SETTING):
        return int(env[MEMORY_SETTING])
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
