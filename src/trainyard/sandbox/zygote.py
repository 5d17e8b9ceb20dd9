"""A warm parent for user-code children: torch imported once, a fresh child forked per request.

Importing torch, torchvision and timm takes seconds (tens on a loaded machine); building LeNet
takes milliseconds. A `Zygote` is a long-lived process, started from a scrubbed environment,
that imports the heavy modules once and then forks one child per request: the child confines
itself (sandbox/policy.py) before any user code runs, and speaks sandbox/childproc.py's protocol
over pipes the server passed along with the request (SCM_RIGHTS over a UNIX socket). The
zygote itself never runs user code. It is recycled after ``max_forks`` children or when its
memory grows, and a request finds no zygote (it could not start, or died) only when it answers
None: the caller then spawns a fresh interpreter instead.

    python -m trainyard.sandbox.zygote SOCKET_FD MODULE...    (the zygote's own side)
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from trainyard.sandbox import namespaces, policy
from trainyard.sandbox.policy import scrubbed_environment

CHECKER_TMP_MB = 512  # the checker's private /tmp, its children's scratch folders



class Zygote:
    """The server's handle on one warm parent (started on first use, restarted as needed)."""

    def __init__(self, preload: list[str], *, max_forks: int = 100, start_timeout: float = 300.0,
                 max_growth_mb: int = 512):
        self.preload, self.max_forks, self.start_timeout = preload, max_forks, start_timeout
        self.max_growth_mb = max_growth_mb
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._forks = 0
        self._start_rss = 0
        self._failed_at = 0.0
        self._retired: list[socket.socket] = []  # recycled zygotes, asked how their children ended
        self._stderr = tempfile.TemporaryFile()
        self.namespaced = False  # whether the running zygote lives inside namespaces
        self._inner: dict[int, int] = {}  # a child's pid here -> its pid in the zygote's namespace
        self.kept_warm = False  # this process warms it (a server, at start-up) or has started it

    def warm_up(self) -> bool:
        """Start the zygote now (a server calls this at start-up, in a thread); True once ready."""
        self.kept_warm = True
        with self._lock:
            return self._ensure()

    def fork(self, setup: dict, fds: list[int]) -> int | None:
        """The pid of a fresh child serving ``setup`` on ``fds``; None when there is no zygote."""
        with self._lock:
            if not self._ensure():
                return None
            assert self._sock is not None
            try:
                inner = int(self._ask({"fork": setup}, fds)["pid"])
                pid = self._host_pid(inner) if self.namespaced else inner
            except (OSError, ValueError, KeyError):
                self._drop()
                return None
            self._inner[pid] = inner
            while len(self._inner) > 1000:
                self._inner.pop(next(iter(self._inner)))
            self._forks += 1
            if self._forks >= self.max_forks or self._grown():
                self._retire()  # the next request starts a fresh one; children live on
            return pid

    def _host_pid(self, inner: int) -> int:
        """The pid, as this process sees it, of the zygote's child ``inner`` (its pid in the
        zygote's own PID namespace, the last of NSpid); OSError when it is not found."""
        assert self._proc is not None
        for proc in psutil.Process(self._proc.pid).children(recursive=True):
            try:
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("NSpid:") and int(line.split()[-1]) == inner and len(line.split()) > 2:
                        return proc.pid
            except (OSError, ValueError):
                continue
        raise OSError(f"the checker's child {inner} is not to be found")

    def exit_code(self, pid: int, wait_s: float = 30) -> int | None:
        """How child ``pid`` ended (negative: the signal), as its zygote saw (which reaps it);
        None if unknown, or when the zygote is busy starting for longer than ``wait_s``."""
        if not self._lock.acquire(timeout=wait_s):
            return None
        try:
            for sock in [self._sock, *self._retired]:
                try:
                    code = self._ask({"wait": self._inner.get(pid, pid)}, sock=sock).get("code")
                except (OSError, ValueError, AttributeError):
                    continue
                if code is not None:
                    return int(code)
            return None
        finally:
            self._lock.release()

    def _ask(self, message: dict, fds: tuple[int, ...] | list[int] = (), sock: socket.socket | None = None) -> dict:
        sock = sock or self._sock
        if sock is None:
            raise OSError("no zygote")
        socket.send_fds(sock, [json.dumps(message).encode()], list(fds))
        if not select.select([sock], [], [], 30)[0]:
            raise OSError("the zygote did not answer")
        return json.loads(sock.recv(4096))

    def _ensure(self) -> bool:
        if self._proc is not None and self._proc.poll() is None:
            return True
        self._drop()
        if time.monotonic() - self._failed_at < 60:
            return False  # it just failed to start: spawn for a while rather than wait again
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = scrubbed_environment(CUDA_VISIBLE_DEVICES="")
        self.namespaced = namespaces.available()
        argv = [sys.executable, "-P", "-m", "trainyard.sandbox.zygote", str(theirs.fileno()), *self.preload]
        if self.namespaced:  # the checker itself lives inside namespaces, as its children's uid
            own = policy.Policy(processes=True, tmp_mb=CHECKER_TMP_MB, tmpdir="/tmp",
                                hidden=[policy.trainyard_home()], uid=namespaces.sandbox_uid())
            argv = namespaces.wrap(own, [*argv[:4], "--policy", own.to_json(), *argv[4:]])
        with theirs:
            self._proc = namespaces.popen_lasting(  # not the calling thread's: it may end first
                argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=self._stderr,
                stderr=self._stderr, env=env, start_new_session=True)
        self._sock = ours
        if not select.select([ours], [], [], self.start_timeout)[0] or ours.recv(64) != b"ready":
            self._failed_at = time.monotonic()
            self._drop()
            return False
        self._forks, self._start_rss = 0, self._rss_mb()
        self.kept_warm = True
        return True

    def _rss_mb(self) -> int:
        try:
            assert self._proc is not None
            with open(f"/proc/{self._proc.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
        except (OSError, ValueError, AssertionError):
            return 0

    def _grown(self) -> bool:
        return self._rss_mb() - self._start_rss > self.max_growth_mb

    def _retire(self) -> None:
        """Start afresh next time; the old zygote stays to reap (and report) its children."""
        if self._sock is not None:
            self._retired = [*self._retired[-3:], self._sock]
            self._sock = None
        self._proc = None

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()  # the zygote exits when its socket ends; its children live on
            self._sock = None
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._drop()


def _child(sock: socket.socket, setup: dict, fds: list[int]) -> None:
    """In the forked child: a session of its own, then child_serve's serve, then exit."""
    code = 0
    try:
        sock.close()
        os.setsid()
        os.dup2(fds[2], 2)
        os.close(fds[2])
        from trainyard.sandbox.child_serve import serve

        serve(setup, fds[0], fds[1])
    except BaseException:  # noqa: BLE001 - whatever happened, this process must not return
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


def main(argv: list[str]) -> None:
    # No parent-death signal: it would fire when the server thread that started us ends. The
    # socket ends with the server instead, and so does this loop.
    private_shm = argv[0] == "--policy"  # inside namespaces: /dev/shm is ours and our children's alone
    if private_shm:  # drop to the sandbox uid, Landlock, before any import
        policy.enter(policy.Policy.from_json(argv[1]))
        argv = argv[2:]
    sock = socket.socket(fileno=int(argv[0]))
    for module in argv[1:]:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - a missing optional library: imported per child
            print(f"zygote: cannot preload {module}: {exc}", file=sys.stderr)
    sock.send(b"ready")
    children: dict[int, int | None] = {}  # pid -> how it ended (None: running), the last 1000
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        _reap(children, private_shm)
        if "wait" in request:
            pid = int(request["wait"])
            deadline = time.monotonic() + 5  # it closed its pipes: it is about to be a zombie
            while children.get(pid, 0) is None and time.monotonic() < deadline:
                time.sleep(0.02)
                _reap(children, private_shm)
            sock.send(json.dumps({"code": children.get(pid)}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            _child(sock, request["fork"], fds)
        for fd in fds:
            os.close(fd)
        children[pid] = None
        while len(children) > 1000:
            children.pop(next(iter(children)))
        sock.send(json.dumps({"pid": pid}).encode())


def _reap(children: dict[int, int | None], private_shm: bool = False) -> None:
    """Reap the children that ended; with none left running, empty the private /dev/shm: what a
    check left there would hold the host's memory for as long as this process lives."""
    for pid in [p for p, code in children.items() if code is None]:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            children[pid] = -1
            continue
        if done:
            children[pid] = os.waitstatus_to_exitcode(status)
            for scratch in Path("/tmp").glob(f"child-{pid}-*"):  # its private scratch (child_serve.serve)
                shutil.rmtree(scratch, ignore_errors=True)
    if private_shm and all(code is not None for code in children.values()):
        for left in Path("/dev/shm").iterdir():
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left, ignore_errors=True)
            else:
                left.unlink(missing_ok=True)


if __name__ == "__main__":
    main(sys.argv[1:])
