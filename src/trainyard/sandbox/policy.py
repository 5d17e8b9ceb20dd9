"""What a sandboxed process may do (`Policy`), whether this machine can confine it (`status`), and
the in-place second layer a process applies to itself (`enter`).

The outer layer is bubblewrap's namespaces (sandbox/namespaces.py: a fresh root, its own PID,
IPC, UTS and network namespaces, private size-limited /tmp and /dev/shm). Inside it, or alone
where namespaces are not available, a process confines itself with what the kernel offers in
place, needing no privilege:

- **Landlock** (sandbox/landlock.py): reads only under an allow-list, writes only where the
  policy says, no TCP unless it has network, no signals to outside processes.
- **rlimits**: memory (RLIMIT_DATA for what malloc and torch count; for a check or a worker
  also RLIMIT_AS above what it has mapped when it starts, which counts shared mappings too),
  open files, file size (a check's stderr cannot fill the disk), CPU seconds, no core dumps.
- **seccomp** (sandbox/seccomp.py): in every sandbox no keyring (add_key, keyctl,
  request_key) and no memfd; for checks and workers no new processes either; a training job
  may start some, counted by its supervisor (sandbox/supervisor.py).
- **PR_SET_NO_NEW_PRIVS**, and as root: every capability dropped, and the uid the namespaces
  chose (`Policy.uid`, 65534 by default) or TRAINYARD_SANDBOX_UID taken, so that user code
  never runs as root.
- **A scrubbed environment**: no ``TRAINYARD_AUTH_TOKEN``, no ``TRAINYARD_DATABASE_URL``.

Where neither layer exists, `status()` says so and callers refuse custom code unless
``TRAINYARD_ALLOW_UNSANDBOXED=1``. Torch-free.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trainyard.core import environment
from trainyard.core.environment import sandbox_memory_mb
from trainyard.core.errors import UserError
from trainyard.sandbox import cgroups, landlock, namespaces, rank_network, seccomp
from trainyard.sandbox.roots import system_read_roots

SECRET_VARIABLES = ("TRAINYARD_AUTH_TOKEN", "TRAINYARD_DATABASE_URL", "TRAINYARD_TOKEN_FD", "TRAINYARD_TOKEN_FILE")
ALLOW_UNSANDBOXED = "TRAINYARD_ALLOW_UNSANDBOXED"

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 38, 24, 28
_SECBITS_NOROOT_LOCKED = 0b11101111  # NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, all locked


class SandboxUnavailable(UserError):
    """Custom code was refused: the kernel offers no sandbox here (HTTP 503)."""

    http_status = 503


@dataclass
class Policy:
    """What one sandboxed process may do. Paths are absolute, as the host names them; missing
    ones are skipped. The namespaces bind ``read`` read-only and ``write`` read-write into the
    fresh root at the same paths, ``devices`` as device nodes; Landlock allows the same inside."""

    read: list[str] = field(default_factory=list)  # besides the system's and Python's folders
    write: list[str] = field(default_factory=list)  # also readable
    hidden: list[str] = field(default_factory=list)  # TRAINYARD_HOME: no system root may hold it
    network: bool = False  # TCP bind/connect (inside its own namespace: loopback only)
    host_network: bool = False  # keep the host's network namespace (a multi-node cluster rank)
    peers: list[str] | None = None  # a cluster rank's: its job's nodes, all it may reach (sandbox/rank_network.py)
    processes: bool = False  # may start child processes (a training's data loader does)
    devices: list[str] = field(default_factory=list)  # device nodes besides /dev's basic ones
    memory_mb: int | None = None
    memory_rlimits: bool = True  # False: its cgroup bounds its memory (sandbox/cgroups.py), shared memory too
    tmp_mb: int = 1024  # the private tmpfs on /tmp (TMPDIR): compilers' and torch's scratch
    shm_mb: int = 64  # the private tmpfs on /dev/shm: a data loader's shared batches
    open_files: int = 1024
    file_size_mb: int | None = None
    cpu_s: int | None = None
    max_processes: int | None = None  # counted by sandbox/supervisor.py, which runs the process
    work_mb: int | None = None  # the bytes its work folder (report_dir) may hold, checked by the supervisor
    report_dir: str | None = None  # the job folder the supervisor reports a limit's breach to
    uid: int | None = None  # the uid to run as, when started as root (namespaces.sandbox_uid)
    gid: int | None = None  # its group, when not the uid's number (a cluster rank's own: rank_network)
    cwd: str | None = None  # the working folder inside, once confined
    tmpdir: str | None = None  # TMPDIR, once confined (a compiler's scratch must be writable)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        return cls(**json.loads(text))


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    return landlock.abi()


def status() -> dict:
    """What confines user code here, for ``trainyard system --json`` and the start-up line."""
    abi = landlock_abi()
    missing = namespaces.unavailable_reason()
    allowed = environment.unsandboxed_allowed()
    layers = ([] if missing else ["bubblewrap namespaces"]) + ([f"landlock (ABI {abi})"] if abi else [])
    if not layers:
        return {"available": False, "mechanism": None, "namespaces": False, "unsandboxed_allowed": allowed,
                "reason": f"this machine offers no sandbox ({missing}; no Landlock in this kernel): custom "
                          f"networks are refused unless {ALLOW_UNSANDBOXED}=1"}
    state = {"available": True, "namespaces": not missing, "unsandboxed_allowed": allowed,
             "mechanism": " + ".join([*layers, "seccomp", "rlimits"])
             + (" + capabilities dropped" if os.geteuid() == 0 else "")}
    if missing:
        state["reason"] = f"no namespaces: {missing}; user code runs with Landlock only, on the host's " \
                          "network, /tmp and /dev/shm"
    state["rank_network"] = rank_network_status(missing)
    state["memory"] = cgroups.mechanism()
    return state


def rank_network_status(namespaces_missing: str | None) -> dict:
    """Whether a multi-node cluster rank running user code is held to its job's peers here."""
    why = rank_network.unavailable_reason() or (f"no namespaces ({namespaces_missing})" if namespaces_missing else None)
    if why:
        return {"held": False, "reason": f"a cluster rank running user code keeps its node's whole network: {why}"}
    return {"held": True, "mechanism": "a uid per job, a group per rank + nftables (meta skgid): its job's peers only"}


def require() -> bool:
    """Whether user code will be sandboxed; raise SandboxUnavailable when it cannot be and
    running it unconfined was not allowed."""
    state = status()
    if state["available"]:
        return True
    if state["unsandboxed_allowed"]:
        return False
    raise SandboxUnavailable(state["reason"])


def trainyard_home() -> str:
    """TRAINYARD_HOME as a real path: what no sandbox may see."""
    return environment.trainyard_home()


def default_policy(read: list[str] | None = None, write: list[str] | None = None,
                   hidden: list[str] | None = None) -> Policy:
    """A check's or worker's policy: reads only ``read`` besides Python's and the system's
    folders (none of which may hold ``hidden`` or TRAINYARD_HOME), writes nothing (but its
    scratch folder), no network, no processes."""
    memory = sandbox_memory_mb(0.5)  # half the machine, unless set
    home = trainyard_home()
    return Policy(read=list(read or []), write=list(write or []), memory_mb=memory, open_files=512,
                  file_size_mb=64, hidden=[os.path.realpath(p) for p in [home, *(hidden or [])]])


def scrubbed_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the secret variables, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARIABLES}
    env.update(overrides)
    return env


def memory_limit_mb() -> int | None:
    """This process's memory limit in MiB: RLIMIT_DATA, else its cgroup's as its parent said
    (TRAINYARD_SANDBOX_MEMORY_MB); None when it has none."""
    limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    if limit == resource.RLIM_INFINITY:
        return environment.memory_setting_mb()
    return limit >> 20


def enter(policy: Policy) -> None:
    """Confine this process (and all it starts) to ``policy``, for good; OSError when the kernel
    refuses a step (the fresh child then exits without running any user code)."""
    uid = policy.uid if policy.uid is not None else environment.sandbox_uid()
    for name in SECRET_VARIABLES:  # the caller scrubbed them already; a fork inherits this copy
        os.environ.pop(name, None)
    _set_limits(policy)
    if os.geteuid() == 0:
        _drop_root(uid, policy.gid)
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        landlock.fail("PR_SET_NO_NEW_PRIVS")
    if landlock_abi():
        hidden = [h.rstrip("/") + "/" for h in policy.hidden]
        system = [r for r in system_read_roots() if not any(h.startswith(r.rstrip("/") + "/") for h in hidden)]
        scratch = [policy.tmpdir] if policy.tmpdir else []
        landlock.restrict([*system, *policy.read], [*policy.write, *policy.devices, *scratch], policy.network)
    seccomp.install(processes=policy.processes)  # every sandbox: no keyring, no memfd
    if policy.tmpdir:
        os.environ["TMPDIR"] = policy.tmpdir
    if policy.cwd and os.path.isdir(policy.cwd):
        os.chdir(policy.cwd)


def _set_limits(policy: Policy) -> None:
    def cap(kind: int, value: int) -> None:
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))

    if policy.memory_mb and policy.memory_rlimits:
        cap(resource.RLIMIT_DATA, policy.memory_mb << 20)
        if not policy.processes:  # shared mappings too: what is mapped now, plus the limit
            cap(resource.RLIMIT_AS, _mapped_bytes() + (policy.memory_mb << 20))
    cap(resource.RLIMIT_NOFILE, policy.open_files)
    if policy.file_size_mb:
        cap(resource.RLIMIT_FSIZE, policy.file_size_mb << 20)
    if policy.cpu_s:
        cap(resource.RLIMIT_CPU, policy.cpu_s)
    cap(resource.RLIMIT_CORE, 0)  # a core dump would hold the network's memory on disk


def _mapped_bytes() -> int:
    """This process's address space now (VmSize): torch's libraries alone map a few GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) << 10
    return 0


def _drop_root(uid: int | None, gid: int | None = None) -> None:
    """Root loses every capability, and becomes ``uid`` (group ``gid``, else the same number) when
    given (the namespaces' fresh root makes the files it needs readable by it; without them, only
    where files allow it)."""
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 40
    for cap_number in range(last + 1):
        _libc.prctl(_PR_CAPBSET_DROP, cap_number, 0, 0, 0)  # an unknown one answers EINVAL
    # Fails without CAP_SETPCAP (a container's root): capset still empties the sets below.
    _libc.prctl(_PR_SET_SECUREBITS, _SECBITS_NOROOT_LOCKED, 0, 0, 0)
    if uid is not None:
        os.setgroups([])
        group = uid if gid is None else gid
        os.setresgid(group, group, group)
        os.setresuid(uid, uid, uid)
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two {effective, permitted, inheritable}, all empty
    if _libc.capset(ctypes.c_char_p(header), data) != 0:
        landlock.fail("capset")


__all__ = ["ALLOW_UNSANDBOXED", "SECRET_VARIABLES", "Policy", "SandboxUnavailable", "default_policy", "enter",
           "landlock_abi", "memory_limit_mb", "require", "scrubbed_environment", "status", "system_read_roots"]
