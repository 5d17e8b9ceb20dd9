"""A cgroup of its own for every confined process group: memory that counts shared memory, and pids.

rlimits cannot bound what a sandbox holds in shared memory: RLIMIT_DATA does not count shared
mappings, RLIMIT_AS counts only what is mapped (a file written into /dev/shm and closed is held
by nobody's address space), and neither bounds a group of processes. The kernel's memory
controller charges every page to the cgroup that touched it, tmpfs (/dev/shm, /tmp) included, so
where this process may make cgroups (as root, on a writable hierarchy) each confined group gets
one: ``memory.max`` (v1: ``memory.limit_in_bytes``, and the swap limit where there is one) and
``pids.max`` from its policy's limits; past the memory limit the kernel kills it (`oom_killed`
tells the caller why it ended), and the cgroup is removed with the group.

Both hierarchies are used as the machine offers them: cgroup v2 (one tree, ``trainyard/<name>``
under its root, controllers enabled there), else v1's ``memory`` and ``pids`` trees (each group
below this process's own cgroup, so that the limits the machine sets on us still hold). Where
neither is writable, `unavailable_reason` says why and the rlimits and tmpfs size caps are the
only bounds, as before. Torch-free.
"""

from __future__ import annotations

import functools
import os
import secrets
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainyard.core import environment
from trainyard.core.environment import MEMORY_SETTING

SETTING = "TRAINYARD_SANDBOX_CGROUPS"  # 0: rlimits only


@dataclass(frozen=True)
class _Tree:
    version: int  # 2, or 1 (one folder per controller)
    parents: tuple[str, ...]  # where groups are made: v2 one folder, v1 the memory and pids folders


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of every cgroup mount."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            out.append((fields[4], tail[0], tail[2]))
    return out


def _own(controller: str) -> str:
    """This process's cgroup path in the v1 hierarchy of ``controller`` ("" for v2's)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return "/"


def _v2(mount: str) -> _Tree | None:
    if not {"memory", "pids"} <= set(Path(mount, "cgroup.controllers").read_text().split()):
        return None
    base = Path(mount, "trainyard")
    base.mkdir(exist_ok=True)
    Path(mount, "cgroup.subtree_control").write_text("+memory +pids")  # EBUSY where the root holds processes
    (base / "cgroup.subtree_control").write_text("+memory +pids")
    return _Tree(2, (str(base),))


@functools.cache
def _probe() -> tuple[_Tree | None, str | None]:
    if not environment.sandbox_cgroups_on():
        return None, f"turned off ({SETTING}=0)"
    if os.geteuid() != 0:
        return None, "not root: this process cannot make cgroups"
    try:
        mounts = _mounts()
        for mount, kind, _ in mounts:
            if kind == "cgroup2" and (tree := _v2(mount)):
                return tree, None
        v1 = {c: m for m, kind, options in mounts if kind == "cgroup" for c in ("memory", "pids")
              if c in options.split(",")}
        if set(v1) == {"memory", "pids"}:
            parents = tuple(os.path.join(v1[c], _own(c).lstrip("/")) for c in ("memory", "pids"))
            if all(os.access(p, os.W_OK) for p in parents):
                return _Tree(1, parents), None
    except OSError as exc:
        return None, f"the cgroup hierarchy is not writable here ({exc.strerror or exc})"
    return None, "no writable cgroup hierarchy with the memory and pids controllers"


def unavailable_reason() -> str | None:
    return _probe()[1]


def mechanism() -> str:
    """How memory is bounded here, for ``trainyard system --json``."""
    tree, why = _probe()
    if tree is None:
        return f"rlimits and tmpfs size caps (no cgroup: {why})"
    return f"a cgroup v{tree.version} per confined process group (memory counts shared memory; pids)"


def bound_by_group(policy: Any, env: dict[str, str]) -> dict[str, str]:
    """A child's ``env``; where cgroups exist its memory is bounded by its group (which counts
    what it holds, shared memory too) instead of RLIMIT_DATA and RLIMIT_AS (which count what it
    reserved, torch's untouched gigabyte too), and it learns its limit from the environment."""
    if policy.memory_mb and unavailable_reason() is None:
        policy.memory_rlimits = False
        env = {**env, MEMORY_SETTING: str(policy.memory_mb)}
    return env


class Group:
    """One confined process group's cgroup (a folder per hierarchy)."""

    def __init__(self, tree: _Tree, name: str, memory_mb: int | None, pids: int | None):
        self.tree, self.memory_mb = tree, memory_mb
        self.folders = [Path(parent, name) for parent in tree.parents]
        for folder in self.folders:
            folder.mkdir()
        if memory_mb:
            limit = str(memory_mb << 20)
            for name_ in ("memory.max", "memory.swap.max") if tree.version == 2 else \
                    ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                self._write(name_, "0" if name_ == "memory.swap.max" else limit)
            self._write("memory.oom.group", "1")  # v2: the whole group goes, not one process of it
        if pids:
            self._write("pids.max", str(pids))

    @classmethod
    def create(cls, what: str, memory_mb: int | None, pids: int | None) -> Group | None:
        """A fresh group for ``what`` ("check", "job"); None where there are no cgroups here."""
        tree = _probe()[0]
        if tree is None:
            return None
        return cls(tree, f"{what}-{os.getpid()}-{secrets.token_hex(4)}", memory_mb, pids)

    @classmethod
    def around(cls, pid: int, what: str, memory_mb: int | None, pids: int | None) -> Group | None:
        """A fresh group holding the running process ``pid`` and those below it."""
        group = cls.create(what, memory_mb, pids)
        if group is not None:
            group.attach_tree(pid)
        return group

    def over_memory(self, what: str) -> str | None:
        """The user's one line when the kernel stopped ``what`` for this group's memory limit."""
        if not self.oom_killed():
            return None
        one = what.replace("the ", "a ", 1)  # "the check" -> "a check"
        return (f"the network needs more than the {self.memory_mb} MiB of memory {one} may use, shared memory "
                f"included ({MEMORY_SETTING}); it was stopped")

    def _write(self, name: str, value: str) -> None:
        for folder in self.folders:
            if (folder / name).exists():
                (folder / name).write_text(value)

    def attach(self, pid: int) -> None:
        """Move process ``pid`` (its threads too) into the group; what it starts stays there."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def attach_tree(self, pid: int) -> None:
        """``pid`` and every process below it (a bwrap and its sandboxed child)."""
        import psutil

        try:
            tree = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
        except psutil.Error:
            return
        for member in tree:
            try:
                self.attach(member)
            except ProcessLookupError:
                pass

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started in the group: a shell moves itself in, then becomes ``argv`` (so that
        nothing runs outside it, not even bwrap's first fork)."""
        moves = " && ".join(f"echo $$ > {shlex.quote(str(f / 'cgroup.procs'))}" for f in self.folders)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *argv]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group for the group's memory limit."""
        name = "memory.events" if self.tree.version == 2 else "memory.oom_control"
        try:
            text = (self.folders[0] / name).read_text()
        except OSError:
            return False
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    def remove(self, within_s: float = 30.0) -> None:
        """Kill what is left in the group and remove it (its memory's charge goes with it)."""
        deadline = time.monotonic() + within_s
        for folder in self.folders:
            while folder.exists() and time.monotonic() < deadline:
                try:
                    pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
                    for pid in pids:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    folder.rmdir()
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: its last processes are still dying
                    time.sleep(0.05)
