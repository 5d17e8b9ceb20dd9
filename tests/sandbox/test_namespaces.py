"""The namespaces around user code (sandbox/namespaces.py), tested from inside with real bwrap:
what a process started by `namespaces.command` cannot reach, and what the host sees of it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from trainyard.sandbox import namespaces
from trainyard.sandbox.policy import Policy

pytestmark = pytest.mark.skipif(not namespaces.available(), reason=f"no namespaces here: "
                                f"{namespaces.unavailable_reason()}")


def run_inside(policy: Policy, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    argv = namespaces.command(policy, [sys.executable, "-c", textwrap.dedent(code)])
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def attempt_code(body: str) -> str:
    """A script printing, per probe, "allowed" or the exception's name."""
    return textwrap.dedent('''
        import json, os, socket
        seen = {}
        def attempt(what, f):
            try:
                f()
                seen[what] = "allowed"
            except OSError as exc:
                seen[what] = type(exc).__name__
        ''') + textwrap.dedent(body) + "\nprint(json.dumps(seen))\n"


@pytest.fixture
def folders(tmp_path):
    home = tmp_path / "home"
    mine, other = home / "jobs" / "mine", home / "jobs" / "other"
    for folder in (mine, other):
        folder.mkdir(parents=True)
        (folder / "log.txt").write_text("log\n")
    (home / "trainyard.db").write_text("the store")
    namespaces.give(mine, recursive=True)
    return home, mine, other


def test_user_code_reaches_nothing_of_the_host(folders, tmp_path):
    import json

    home, mine, other = folders
    listener = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = str(tmp_path / "host.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0trainyard-test-{os.getpid()}")
    abstract.listen()
    shm_name = f"/dev/shm/trainyard-probe-{os.getpid()}"
    code = attempt_code(f'''
        attempt("read store", lambda: open("{home}/trainyard.db").read())
        attempt("other job", lambda: open("{other}/log.txt").read())
        attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {listener.getsockname()[1]}), timeout=5))
        attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
            b"x", ("127.0.0.1", {udp.getsockname()[1]})))
        attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect("{unix_path}"))
        attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect("\\0trainyard-test-{os.getpid()}"))
        attempt("shm", lambda: open("{shm_name}", "w").write("x"))
        attempt("write mine", lambda: open("{mine}/probe", "w").write("x"))
        seen["other job there"] = os.path.exists("{other}")  # stat: not Landlock's to refuse
        seen["server visible"] = os.path.exists("/proc/{os.getpid()}")
        seen["processes"] = len([p for p in os.listdir("/proc") if p.isdigit()])
        ''')
    try:
        out = run_inside(Policy(write=[str(mine), "/dev/shm"], processes=True, network=True,
                                hidden=[str(home)], shm_mb=8), code)
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout)
        with pytest.raises(BlockingIOError):
            udp.recv(16)  # loopback delivers at once: had it been sent to the host, it would be here
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        for s in (listener, udp, unix, abstract):
            s.close()
    assert seen.pop("other job there") is False  # the other job's folder is not in this root at all
    assert seen.pop("server visible") is False and seen.pop("processes") <= 4  # bwrap's init, python
    assert seen == {"read store": "FileNotFoundError", "other job": "FileNotFoundError",
                    "tcp": "ConnectionRefusedError", "udp": "allowed",  # sent into its own loopback
                    "unix": "FileNotFoundError", "abstract": "ConnectionRefusedError",
                    "shm": "allowed", "write mine": "allowed"}
    assert not os.path.exists(shm_name)  # its /dev/shm is its own
    assert (mine / "probe").read_text() == "x"


def test_the_private_tmpfs_has_its_size(tmp_path):
    code = attempt_code('''
        def fill(path):
            with open(path, "wb") as f:
                for _ in range(64):
                    f.write(b"x" * (1 << 20))
        attempt("shm 64 MiB", lambda: fill("/dev/shm/big"))
        attempt("tmp 64 MiB", lambda: fill("/tmp/big"))
        seen["tmpdir"] = os.environ.get("TMPDIR")
        ''')
    out = run_inside(Policy(write=["/dev/shm"], processes=True, shm_mb=16, tmp_mb=16, tmpdir="/tmp"), code)
    assert out.returncode == 0, out.stderr
    import json

    assert json.loads(out.stdout) == {"shm 64 MiB": "OSError", "tmp 64 MiB": "OSError", "tmpdir": "/tmp"}


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop is for a server running as root")
def test_user_code_never_runs_as_root_outside(tmp_path):
    marker = f"trainyard-uid-probe-{os.getpid()}"
    sleeper = [sys.executable, "-c", f"import time; time.sleep(30)  # {marker}"]
    argv = namespaces.command(Policy(processes=True), sleeper)
    proc = subprocess.Popen(argv)
    try:
        deadline, found = time.monotonic() + 60, []
        while not found and time.monotonic() < deadline:
            # the user's process itself, once `enter` has exec'd it (bwrap and `enter` name it too)
            found = [p for p in psutil.Process(proc.pid).children(recursive=True)
                     if marker in " ".join(p.cmdline()) and "trainyard.sandbox.enter" not in p.cmdline()]
            time.sleep(0.1)
        assert found, "the probe never started"
        status = Path(f"/proc/{found[0].pid}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        assert set(uids) == {str(namespaces.sandbox_uid())} and "0" not in uids
        caps = next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1]
        assert int(caps, 16) == 0
    finally:
        proc.kill()
        proc.wait()


def test_only_the_named_device_nodes_are_there(tmp_path):
    out = run_inside(Policy(devices=["/dev/null"], processes=True),
                     "import os; print(sorted(n for n in os.listdir('/dev') if n.startswith('nvidia')))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_inductor_compiles_inside_a_training_jobs_sandbox():
    """Issue 34: a confined job's TMPDIR is writable, so torch.compile's C++ build works in it."""
    code = """
        import os, torch
        f = torch.compile(lambda x: (x * 2).sin() + 1)
        print(os.environ["TMPDIR"], float(f(torch.zeros(8)).sum()))
        """
    policy = Policy(write=["/dev/shm"], processes=True, tmpdir="/tmp", open_files=65536)
    out = run_inside(policy, code, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["/tmp", "8.0"]
