"""The outer layer: bubblewrap (Debian's ``bubblewrap``, ``/usr/bin/bwrap``) namespaces around every
process that runs user code.

Why bubblewrap: it is the kernel's namespaces with nothing else (no daemon, no image, one small
binary, what Flatpak uses), and it builds a fresh root from bind mounts, which is the allow-list
we want. A sandboxed process gets its own mount, PID, IPC, UTS and network namespaces: a root
holding only Python's and the system's folders read-only (``/etc`` without its secrets), the
policy's read folders read-only and write folders read-write, its own ``/proc`` (no outside
process in it), a minimal ``/dev`` plus the device nodes the policy names, private size-limited
tmpfs on ``/tmp`` and ``/dev/shm``, and loopback only (a job's processes share that loopback:
their rendezvous works, nothing of the host's network is reachable).

The uid: run by an unprivileged server, bwrap makes a user namespace and the process keeps the
server's uid outside. Run by root, bwrap cannot be started as an unprivileged uid here, because
it resolves every bind source as its caller and Python lives under ``/root`` (mode 0700): so it
runs as root without a user namespace, and the confined process drops to `sandbox_uid()`
(65534 unless ``TRAINYARD_SANDBOX_UID``) and every capability before any user code runs
(sandbox/policy.py). Landlock, seccomp and rlimits stay as the second layer inside.

``TRAINYARD_SANDBOX_NAMESPACES=0`` turns the namespaces off (Landlock alone, as before).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from trainyard.core import environment
from trainyard.sandbox.landlock import HIDDEN_ETC
from trainyard.sandbox.roots import SYSTEM, python_roots

SETTING = "TRAINYARD_SANDBOX_NAMESPACES"
UID_SETTING = "TRAINYARD_SANDBOX_UID"
DEFAULT_UID = 65534  # nobody
MIN_VERSION = (0, 8)  # --size on --tmpfs

# bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started it ends, not
# its process: a sandbox started from a passing thread (serve's warm-up thread, a request's
# worker thread, which anyio ends after ten idle seconds) was killed as that thread ended, and
# its next use paid a torch start again. Every long-lived sandbox is started from this one
# thread, which lives as long as the process (`popen_lasting`).
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainyard-sandbox-start")


def popen_lasting(argv: list[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(argv, **kwargs)`` from a thread that lasts as long as this process."""
    return _SPAWNER.submit(lambda: subprocess.Popen(argv, **kwargs)).result()


@functools.cache
def _probe() -> str | None:
    path = shutil.which("bwrap")
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        found = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
        if found < MIN_VERSION:
            return f"bubblewrap {version.strip()} is older than 0.8 (no tmpfs size limit)"
        probe = subprocess.run([path, *_unshare(False, True), "--ro-bind", "/", "/", "--", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap cannot start: {exc}"
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot make namespaces here (user namespaces disabled?): {tail}"
    return None


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here; None when they can."""
    if not environment.sandbox_namespaces_on():
        return f"namespaces turned off ({SETTING}=0)"
    return _probe()


def available() -> bool:
    return unavailable_reason() is None


def sandbox_uid() -> int | None:
    """The uid user code runs as when this process is root: ``TRAINYARD_SANDBOX_UID``, or nobody
    (65534) inside namespaces, whose fresh root makes Python readable to it; without them, only
    the uid set (the host's files may not be readable by another); None when not root."""
    if os.geteuid() != 0:
        return None
    chosen = environment.sandbox_uid()
    if chosen is not None:
        return chosen
    return DEFAULT_UID if available() else None


def give(path: str | os.PathLike, recursive: bool = False, uid: int | None = None) -> None:
    """Make ``path`` (and, with ``recursive``, what it holds, links not followed) the sandbox
    uid's (or ``uid``'s: a cluster job's own), so that user code dropped to it can write there;
    nothing to do when not root."""
    uid = sandbox_uid() if uid is None else uid
    if uid is None or os.geteuid() != 0:
        return
    os.lchown(path, uid, uid)
    if recursive:
        for folder, dirs, files in os.walk(os.fspath(path)):
            for name in dirs + files:
                os.lchown(os.path.join(folder, name), uid, uid)


def _unshare(host_network: bool, new_session: bool) -> list[str]:
    args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not host_network:
        args.append("--unshare-net")  # loopback only
    if os.geteuid() != 0:
        args.append("--unshare-user")  # unprivileged bwrap needs one; root drops its uid inside instead
    if new_session:
        args.append("--new-session")  # no TIOCSTI into a terminal the server may hold
    return args


class Policy(Protocol):
    """What the namespaces read of a process's policy: sandbox/policy.py's `Policy`, named here by
    its shape so that this module needs nothing from policy.py, which builds on this one."""

    read: list[str]
    write: list[str]
    hidden: list[str]
    devices: list[str]
    host_network: bool
    tmp_mb: int
    shm_mb: int
    uid: int | None

    def to_json(self) -> str: ...


def bwrap_args(policy: Policy, *, new_session: bool = True) -> list[str]:
    """bwrap and its options for ``policy``, up to and including ``--``."""
    path = shutil.which("bwrap") or "bwrap"
    mounts = _Mounts()
    # The private file systems first: a folder bound below /tmp afterwards (a checkout or a
    # virtual environment there, a job folder in a test's tmp) shows through the new tmpfs
    # instead of being hidden by it.
    mounts.args += ["--proc", "/proc", "--dev", "/dev",
                    "--perms", "1777", "--size", str(policy.tmp_mb << 20), "--tmpfs", "/tmp",
                    "--perms", "1777", "--size", str(policy.shm_mb << 20), "--tmpfs", "/dev/shm"]
    mounts.made |= {"/tmp", "/dev", "/dev/shm", "/proc"}
    for root in sorted(python_roots() | set(SYSTEM)):
        mounts.add("--ro-bind", root)
    mounts.add("--ro-bind", "/sys")
    for name in HIDDEN_ETC:
        secret = os.path.join("/etc", name)
        if os.path.isdir(secret):
            mounts.args += ["--tmpfs", secret]
        elif os.path.lexists(secret):
            mounts.args += ["--ro-bind", "/dev/null", secret]
    for hidden in policy.hidden:  # TRAINYARD_HOME inside a bound folder: an empty one instead
        if os.path.isdir(hidden) and any(hidden.startswith(d.rstrip("/") + "/") for d in mounts.bound):
            mounts.args += ["--perms", "0755", "--tmpfs", hidden]
    writable = [w for w in policy.write if w not in ("/dev/shm", "/tmp")]
    # A read folder inside a write one (the spec or fence of a job made before the split, whose
    # work folder is its job folder) is bound after it: a later bind of the folder above would hide it.
    nested = [r for r in policy.read if any(r.startswith(w.rstrip("/") + "/") for w in writable)]
    for folder in [r for r in policy.read if r not in nested]:
        mounts.add("--ro-bind", folder)
    for folder in writable:
        mounts.add("--bind", folder)
    for folder in nested:
        mounts.nested_read_only(folder)
    for device in policy.devices:
        if os.path.exists(device):
            mounts.args += ["--dev-bind", device, device]
    return [path, *_unshare(policy.host_network, new_session), *mounts.args, "--chdir", "/", "--"]


class _Mounts:
    """bind mounts in order, with the folders above each made first, mode 0755 (bwrap would make
    them 0700, which the dropped uid could not cross)."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.bound: set[str] = set()
        self.made: set[str] = {"/"}

    def add(self, kind: str, source: str) -> None:
        source = os.path.abspath(source)
        if not os.path.exists(source) or source in self.bound:
            return
        parent = os.path.dirname(source)
        chain = []
        while parent not in self.made and not any(parent == b or parent.startswith(b + "/") for b in self.bound):
            chain.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(chain):
            self.args += ["--perms", "0755", "--dir", folder]
            self.made.add(folder)
        self.args += [kind, source, source]
        self.bound.add(source)

    def nested_read_only(self, source: str) -> None:
        """``source``, inside a folder bound read-write already, bound read-only over it."""
        source = os.path.abspath(source)
        if os.path.exists(source):
            self.args += ["--ro-bind", source, source]


def wrap(policy: Policy, argv: list[str], *, new_session: bool = True) -> list[str]:
    """``argv`` inside namespaces for ``policy`` (its uid chosen here); unchanged without them.
    ``argv`` must confine itself further (sandbox.enter), as childproc and the zygote do."""
    if not available():
        return argv
    if policy.uid is None:  # a cluster rank's comes with its policy (sandbox/rank_network.py)
        policy.uid = sandbox_uid()
    return [*bwrap_args(policy, new_session=new_session), *argv]


def command(policy: Policy, argv: list[str], *, new_session: bool = True) -> list[str]:
    """The full argv to spawn so that ``argv`` runs confined by ``policy``: bwrap's namespaces
    (where available), then Landlock, seccomp, rlimits and the uid drop applied by
    ``python -m trainyard.sandbox.enter``, which then execs ``argv``."""
    if policy.uid is None and available():
        policy.uid = sandbox_uid()
    inner = [sys.executable, "-P", "-m", "trainyard.sandbox.enter", policy.to_json(), "--", *argv]
    return wrap(policy, inner, new_session=new_session)
