"""Confine a process that runs user code (custom networks, imported archives) with the kernel's own means.

What a sandboxed process gets, and from which mechanism (chosen for this machine and CI: Linux
6.x with Landlock ABI 7, Debian 12, running as root; no privileges are needed for any of it):

- **Landlock** (ctypes, no helper binary): reads only under an allow-list (Python's own folders,
  the system's, ``/proc``, ``/sys``, ``/dev`` and what the caller names: a job folder, a
  dataset), so TRAINYARD_HOME, its SQLite store, other jobs and /tmp are out of sight; writes
  only where the caller says (a training job's own folder; nothing for a check or a model
  worker); no TCP bind/connect for a check or worker (the PostgreSQL store is out of reach);
  no signals to, and no abstract sockets of, processes outside the sandbox. Landlock also
  forbids ptrace-mode access to processes outside the sandbox, which is what makes
  ``/proc/<server pid>/environ`` and ``/mem`` unreadable even under the same uid.
- **rlimits**: memory (RLIMIT_DATA: what malloc and torch's allocator count; RLIMIT_AS would
  trip on the gigabytes of address space CUDA libraries reserve), open files, file size (a
  check's stderr cannot fill the disk), CPU seconds.
- **seccomp** for checks and workers: no new processes at all (threads still work); a training
  job may start some, counted by its supervisor (sandbox/supervisor.py), since RLIMIT_NPROC is not.
- **PR_SET_NO_NEW_PRIVS**, and as root: every capability dropped (bounding set, securebits
  NOROOT, capset), so the rlimits cannot be raised again and nothing privileged is left; an
  optional drop to an unprivileged uid (``TRAINYARD_SANDBOX_UID``) where files allow it.
- **A scrubbed environment**: no ``TRAINYARD_AUTH_TOKEN``, no ``TRAINYARD_DATABASE_URL``.

bubblewrap also works, but is a binary to install on every node and costs a process start;
Landlock is applied in place, which a warm forked checker needs (sandbox/childproc.py).
Where the kernel has no Landlock, `status()` says so and callers refuse custom code unless
``TRAINYARD_ALLOW_UNSANDBOXED=1``. Torch-free, like all of core.

    python -m trainyard.sandbox.policy POLICY_JSON -- COMMAND...   (confine, then exec COMMAND)
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import platform
import resource
import struct
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trainyard.core.errors import UserError

SECRET_VARIABLES = ("TRAINYARD_AUTH_TOKEN", "TRAINYARD_DATABASE_URL", "TRAINYARD_TOKEN_FD", "TRAINYARD_TOKEN_FILE")
ALLOW_UNSANDBOXED = "TRAINYARD_ALLOW_UNSANDBOXED"

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on x86_64 and aarch64
# Landlock file-system rights; those that apply to files (not only to folders) come first.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_SET_SECCOMP = 38, 24, 28, 22
_SECBITS_NOROOT_LOCKED = 0b11101111  # NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, all locked


class SandboxUnavailable(UserError):
    """Custom code was refused: the kernel offers no sandbox here (HTTP 503)."""

    http_status = 503


@dataclass
class Policy:
    """What one sandboxed process may do. Paths are absolute; missing ones are skipped."""

    read: list[str] = field(default_factory=list)  # besides the system's and Python's folders
    write: list[str] = field(default_factory=list)  # also readable
    hidden: list[str] = field(default_factory=list)  # TRAINYARD_HOME: no system root may hold it
    network: bool = False  # TCP bind/connect (a distributed training's rendezvous needs it)
    processes: bool = False  # may start child processes (a training's data loader does)
    memory_mb: int | None = None
    open_files: int = 1024
    file_size_mb: int | None = None
    cpu_s: int | None = None
    max_processes: int | None = None  # counted by sandbox/supervisor.py, which runs the process
    report_dir: str | None = None  # the job folder the supervisor reports a limit's breach to

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        return cls(**json.loads(text))


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    abi = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(abi), 0)


def status() -> dict:
    """What confines user code here, for ``trainyard system --json`` and the start-up line."""
    abi = landlock_abi()
    allowed = os.environ.get(ALLOW_UNSANDBOXED, "") in ("1", "true", "yes")
    if abi:
        return {"available": True, "mechanism": f"landlock (ABI {abi}) + seccomp + rlimits"
                + (" + capabilities dropped" if os.geteuid() == 0 else ""), "unsandboxed_allowed": allowed}
    return {"available": False, "mechanism": None, "unsandboxed_allowed": allowed,
            "reason": "this kernel offers no Landlock: custom networks are refused unless "
                      f"{ALLOW_UNSANDBOXED}=1"}


def require() -> bool:
    """Whether user code will be sandboxed; raise SandboxUnavailable when it cannot be and
    running it unconfined was not allowed."""
    state = status()
    if state["available"]:
        return True
    if state["unsandboxed_allowed"]:
        return False
    raise SandboxUnavailable(state["reason"])


def scrubbed_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the secret variables, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARIABLES}
    env.update(overrides)
    return env


def memory_limit_mb() -> int | None:
    """This process's memory limit (RLIMIT_DATA) in MiB; None when it has none."""
    limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    return None if limit == resource.RLIM_INFINITY else limit >> 20


def system_read_roots() -> list[str]:
    """Folders every Python process needs to read: the interpreter's and the system's."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/opt"}
    # Package folders on sys.path, and PYTHONPATH's: never the working folder ``python -m`` puts
    # first, which may well hold TRAINYARD_HOME.
    chosen = set(os.environ.get("PYTHONPATH", "").split(os.pathsep))
    roots.update(p for p in sys.path if os.path.isabs(p) and os.path.isdir(p)
                 and (p in chosen or os.path.basename(p) in ("site-packages", "dist-packages")))
    trainyard_src = Path(__file__).resolve().parents[2]
    roots.add(str(trainyard_src))
    return sorted(roots)


_HIDDEN_ETC = ("shadow", "gshadow", "shadow-", "gshadow-", "sudoers", "ssh")


def enter(policy: Policy) -> None:
    """Confine this process (and all it starts) to ``policy``, for good; OSError when the kernel
    refuses a step (the fresh child then exits without running any user code)."""
    uid = os.environ.get("TRAINYARD_SANDBOX_UID")
    for name in SECRET_VARIABLES:  # the caller scrubbed them already; a fork inherits this copy
        os.environ.pop(name, None)
    _set_limits(policy)
    if os.geteuid() == 0:
        _drop_root(int(uid) if uid else None)
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("PR_SET_NO_NEW_PRIVS")
    if landlock_abi():
        _landlock(policy)
    if not policy.processes:
        _no_new_processes()


def _set_limits(policy: Policy) -> None:
    def cap(kind: int, value: int) -> None:
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))

    if policy.memory_mb:
        cap(resource.RLIMIT_DATA, policy.memory_mb << 20)
    cap(resource.RLIMIT_NOFILE, policy.open_files)
    if policy.file_size_mb:
        cap(resource.RLIMIT_FSIZE, policy.file_size_mb << 20)
    if policy.cpu_s:
        cap(resource.RLIMIT_CPU, policy.cpu_s)
    cap(resource.RLIMIT_CORE, 0)  # a core dump would hold the network's memory on disk


def _drop_root(uid: int | None) -> None:
    """Root keeps its uid (the files it reads are root's) but loses every capability; or
    becomes ``uid`` (TRAINYARD_SANDBOX_UID) when the files it needs are readable by others."""
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
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two {effective, permitted, inheritable}, all empty
    if _libc.capset(ctypes.c_char_p(header), data) != 0:
        _fail("capset")


def _landlock(policy: Policy) -> None:
    abi = landlock_abi()
    fs_all = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) \
        | (_IOCTL_DEV if abi >= 5 else 0)
    net_all = 0b11 if abi >= 4 else 0  # BIND_TCP, CONNECT_TCP
    scoped = 0b11 if abi >= 6 else 0  # abstract UNIX sockets, signals
    attr = struct.pack("QQQ", fs_all, 0 if policy.network else net_all, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(size),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    try:
        reading = _EXECUTE | _READ_FILE | _READ_DIR | (_IOCTL_DEV if abi >= 5 else 0)
        hidden = [h.rstrip("/") + "/" for h in policy.hidden]
        system = [r for r in system_read_roots() if not any(h.startswith(r.rstrip("/") + "/") for h in hidden)]
        for root in [*system, *policy.read]:
            if root == "/etc":
                _allow_except(ruleset, "/etc", _HIDDEN_ETC, reading)
            else:
                _allow(ruleset, root, reading)
        _allow(ruleset, "/dev/null", reading | _WRITE_FILE)
        for root in policy.write:
            _allow(ruleset, root, fs_all)
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder this machine does not have
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            access &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
        rule = struct.pack("=Qi", access, fd)
        if _libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1),
                         ctypes.c_char_p(rule), ctypes.c_uint32(0)) != 0:
            _fail(f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def _allow_except(ruleset: int, folder: str, hidden: tuple[str, ...], access: int) -> None:
    # No rule on the folder itself (it would cover every file in it); Landlock needs none to walk
    # through a folder, so the other entries open by name.
    for name in os.listdir(folder):
        if name not in hidden:
            _allow(ruleset, os.path.join(folder, name), access)


def _no_new_processes() -> None:
    """seccomp: fork, vfork and clone without CLONE_THREAD fail with EPERM; clone3 answers
    ENOSYS, so that glibc falls back to clone (threads) and posix_spawn fails."""
    machine = platform.machine()
    denied: tuple[int, ...]
    if machine == "x86_64":
        arch, denied, clone = 0xC000003E, (57, 58), 56  # fork, vfork; clone
    elif machine == "aarch64":
        arch, denied, clone = 0xC00000B7, (), 220
    else:
        return
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    eperm, enosys, allow = 0x00050000 | 1, 0x00050000 | 38, 0x7FFF0000
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, eperm),  # another ABI: refused
            (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 numbers: refused
    for number in denied:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    prog += [(jeq, 0, 1, 435), (ret, 0, 0, enosys),
             (jeq, 0, 3, clone), (ld, 0, 0, 16), (jset, 1, 0, 0x00010000), (ret, 0, 0, eperm),
             (ret, 0, 0, allow)]
    code = b"".join(struct.pack("HBBI", *op) for op in prog)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("HxxxxxxQ", len(prog), ctypes.addressof(buffer))
    if _libc.prctl(_PR_SET_SECCOMP, 2, ctypes.c_char_p(fprog), 0, 0) != 0:
        _fail("seccomp")


def _fail(what: str) -> None:
    errno = ctypes.get_errno()
    raise OSError(errno, f"sandbox: {what} failed: {os.strerror(errno)}")


def main(argv: list[str]) -> None:
    """Confine to the policy in argv[0], then exec the command after ``--``."""
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m trainyard.sandbox.policy POLICY_JSON -- COMMAND...")
    enter(Policy.from_json(argv[0]))
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
