"""One protocol for every child process that runs user code: network checks, exports, model workers.

A `Child` is one sandboxed process (sandbox/policy.py) serving a *handler*, a function named
``"module:function"`` that takes a request document and returns an answer document (its module
may keep state between requests: a model worker keeps its network). The child either is forked
from a warm `Zygote` (torch already imported: a check then answers in about a second) or
spawned as ``python -m trainyard.sandbox.child_serve`` (a fresh interpreter). This module is
the parent's side; sandbox/child_serve.py the child's, which the zygote runs too.

The conversation runs over two private pipes, never over fd 0/1/2: fd 1 and ``sys.stdout`` point
at the child's stderr (a file bounded by RLIMIT_FSIZE), so nothing the user's code prints can
pass for an answer. Each message is a frame ``TY <id> <length>\\n`` + that many bytes of JSON;
the parent reads the header with a bound, refuses a frame whose id is not the request's or whose
length is over the request's bound, and reads no more than that. Every wait has a deadline; a
child that misses one, breaks the protocol or dies is killed with its whole process group and
the caller gets `ChildFailed` (a 503 that says what happened). Torch-free, like all of core.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.core.errors import UserError
from trainyard.core.formatting import process_end
from trainyard.sandbox import cgroups, namespaces
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox.child_serve import STATE_ID, out_of_memory, serve, write_frame
from trainyard.sandbox.policy import default_policy

if TYPE_CHECKING:
    from trainyard.sandbox.zygote import Zygote

__all__ = ["Child", "ChildFailed", "default_policy", "out_of_memory", "serve"]

CHILD_TASKS = 1024  # pids.max: its threads (torch's pools); seccomp already forbids new processes
MAX_ANSWER_BYTES = 64 << 20  # a classify answer with every layer's views stays well below
_HEADER_MAX = 64


class ChildFailed(UserError):
    """The child timed out, died or broke the protocol: the request was not served (HTTP 503)."""

    http_status = 503

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class Child:
    """One sandboxed process serving ``handler``; `ask` sends a request and returns its answer."""

    def __init__(self, handler: str, policy: sandbox.Policy, *, what: str, start_timeout: float,
                 zygote: Zygote | None = None, env: dict[str, str] | None = None, trusted: bool = False):
        self.what = what  # "the network check", for messages
        self._next_id = STATE_ID
        self.scratch = tempfile.mkdtemp(prefix="trainyard-child-")  # its TMPDIR, writable
        namespaces.give(self.scratch)  # the child runs as the sandbox uid (sandbox/namespaces.py)
        policy.uid = namespaces.sandbox_uid()
        # The checker's namespaces hold no job folder: a child that reads or writes folders starts in
        # its own. A checker's child cannot see the scratch folder: it makes its own in the checker's /tmp.
        preload = list(zygote.preload) if zygote is not None else []
        if zygote is not None and (policy.read or policy.write) and namespaces.available():
            zygote = None
        in_checker = zygote is not None and zygote.warm_up() and zygote.namespaced
        if not in_checker:
            policy.write = [*policy.write, self.scratch]
        self.stderr = tempfile.TemporaryFile()
        request_r, self._requests = os.pipe()
        self._answers, answer_w = os.pipe()
        child_fds = [request_r, answer_w, self.stderr.fileno()]
        self.pid = -1
        self.proc: subprocess.Popen | None = None
        self._zygote = zygote
        try:
            if not trusted:  # our own code (a standard network's check) may run where no sandbox is
                sandbox.require()  # user code only with Landlock, or where running it unconfined was allowed
            # Whatever the kernel offers (without Landlock: rlimits, seccomp, no capabilities; a cgroup).
            setup = {"handler": handler, "private_tmp": in_checker, "preload": preload,
                     "env": cgroups.bound_by_group(policy, {"TMPDIR": self.scratch, **(env or {})})}
            setup["policy"] = policy.to_json()  # after bound_by_group, which may change it
            if zygote is not None and (pid := zygote.fork(setup, child_fds)):
                self.pid = pid
            else:
                self._spawn(setup, request_r, answer_w)
        except BaseException:
            self._close_fds()
            raise
        finally:
            os.close(request_r)
            os.close(answer_w)
        self.group: cgroups.Group | None = None
        try:
            self._read_frame(STATE_ID, start_timeout, 4096, "start")
            # Before any request: a cgroup of its own, where its /dev/shm counts too (sandbox/cgroups.py)
            self.group = cgroups.Group.around(self.pid, "child", policy.memory_mb, CHILD_TASKS)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, setup: dict, request_r: int, answer_w: int) -> None:
        env = sandbox.scrubbed_environment(CUDA_VISIBLE_DEVICES="", **setup["env"])
        policy = sandbox.Policy.from_json(setup["policy"])
        argv = [sys.executable, "-P", "-m", "trainyard.sandbox.child_serve", json.dumps(setup), str(request_r),
                str(answer_w)]
        self.proc = namespaces.popen_lasting(  # a model worker outlives the request that started it
            namespaces.wrap(policy, argv),
            pass_fds=(request_r, answer_w), stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr,
            env=env, start_new_session=True)
        self.pid = self.proc.pid

    def ask(self, request: dict, timeout: float, max_bytes: int = MAX_ANSWER_BYTES, what: str = "answer") -> dict:
        """The handler's answer to ``request``; ChildFailed (the child then stopped) when none came."""
        # An id the user's code cannot guess: a frame it writes into the answer pipe is refused.
        self._next_id = secrets.randbits(62) + 1
        try:
            write_frame(self._requests, self._next_id, request)
        except OSError:  # a broken pipe: the child is gone
            raise self._failure(f"{self.what} ended before it could {what}") from None
        answer = self._read_frame(self._next_id, timeout, max_bytes, what)
        if answer.pop("fatal", False):  # over its memory: whatever it still holds goes with it
            self.stop()
        return answer

    def _read_frame(self, request_id: int, timeout: float, max_bytes: int, what: str) -> dict:
        deadline = time.monotonic() + timeout
        header = self._read_until(deadline, timeout, what, header=True)
        parts = header.split()
        if len(parts) != 3 or parts[0] != b"TY" or parts[1] != str(request_id).encode() or not parts[2].isdigit():
            raise self._failure(f"{self.what} sent something that is not its answer; it was stopped")
        size = int(parts[2])
        if size > max_bytes:
            raise self._failure(f"{self.what} sent an answer of {size / 2**20:.0f} MiB, over the "
                                f"{max_bytes / 2**20:.0f} MiB an answer may have; it was stopped")
        try:
            doc = json.loads(self._read_until(deadline, timeout, what, size=size))
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise self._failure(f"{self.what} sent something that is not its answer; it was stopped")
        return doc

    def _read_until(self, deadline: float, timeout: float, what: str, *, header: bool = False,
                    size: int = 0) -> bytes:
        """The header line (at most _HEADER_MAX bytes) or exactly ``size`` bytes, by ``deadline``."""
        data = b""
        while (b"\n" not in data) if header else (len(data) < size):
            if header and len(data) >= _HEADER_MAX:
                raise self._failure(f"{self.what} sent something that is not its answer; it was stopped")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise self._failure(f"{self.what} took longer than {timeout:g} s and was stopped",
                                    timed_out=True)
            chunk = os.read(self._answers, 1 if header else min(size - len(data), 1 << 20))
            if not chunk:
                raise self._failure(f"{self.what} ended before it could {what}", died=True)
            data += chunk
        return data

    def _failure(self, message: str, timed_out: bool = False, died: bool = False) -> ChildFailed:
        if died and self.group is not None and (over := self.group.over_memory(self.what)):
            message, died = over, False
        if died:
            code = self._wait_code()
            tail = self.stderr_tail().splitlines()[-1:] if self.stderr and not self.stderr.closed else []
            message += f" ({process_end(code)})" if code is not None else ""
            message += f": {tail[0][:300]}" if tail else ""
        self.stop()
        return ChildFailed(message, timed_out)

    def _wait_code(self) -> int | None:
        if self.proc is not None:
            try:
                return self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                return None
        return self._zygote.exit_code(self.pid) if self._zygote is not None else None

    def stderr_tail(self, size: int = 2000) -> str:
        self.stderr.seek(max(0, self.stderr.seek(0, 2) - size))
        return self.stderr.read().decode("utf-8", "replace").strip()

    def alive(self) -> bool:
        if self.pid <= 0:
            return False
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        return not Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"

    def stop(self) -> None:
        """Kill the child and everything it started (its own process group); idempotent."""
        if self.pid > 0:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if self.proc is not None:
                self.proc.wait()
            elif self._zygote is not None:
                self._zygote.exit_code(self.pid, wait_s=1)  # reaped: no zombie left behind
            self.pid = -self.pid
        group = getattr(self, "group", None)
        if group is not None:
            group.remove()
            self.group = None
        self._close_fds()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _close_fds(self) -> None:
        for name in ("_requests", "_answers"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
