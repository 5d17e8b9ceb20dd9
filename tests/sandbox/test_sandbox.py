"""A sandboxed process cannot read the store or another process's environment, write outside its
folder, start processes or take more memory than its policy gives; an allowed folder still works."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from trainyard.sandbox import namespaces
from trainyard.sandbox import policy as sandbox

pytestmark = pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock")

PROBE = r"""
import ctypes, errno, json, os, platform, sys
def attempt(f):
    try:
        f()
        return "allowed"
    except MemoryError:
        return "MemoryError"
    except OSError as exc:
        return type(exc).__name__
def errno_of(f):
    try:
        f()
        return "allowed"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
def add_key():  # a key in the uid's user keyring (@u, -4): shared by every process of that uid
    libc = ctypes.CDLL(None, use_errno=True)
    number = {"x86_64": 248, "aarch64": 217}[platform.machine()]
    if libc.syscall(number, b"user", b"trainyard-probe", b"secret", 6, -4) < 0:
        raise OSError(ctypes.get_errno(), "add_key")
def keyctl_read():  # KEYCTL_GET_KEYRING_ID (0) of the user keyring
    libc = ctypes.CDLL(None, use_errno=True)
    number = {"x86_64": 250, "aarch64": 219}[platform.machine()]
    if libc.syscall(number, 0, -4, 0) < 0:
        raise OSError(ctypes.get_errno(), "keyctl")
home, mine, other, pid = sys.argv[1:5]
print(json.dumps({
    "read store": attempt(lambda: open(os.path.join(home, "trainyard.db")).read()),
    "write store": attempt(lambda: open(os.path.join(home, "trainyard.db"), "a").write("x")),
    "write other job": attempt(lambda: open(os.path.join(other, "log.txt"), "a").write("x")),
    "write own job": attempt(lambda: open(os.path.join(mine, "log.txt"), "a").write("x")),
    "read environ": attempt(lambda: open(f"/proc/{pid}/environ", "rb").read()),
    "read shadow": attempt(lambda: open("/etc/shadow").read()),
    "fork": attempt(lambda: os.fork() or os._exit(0)),
    "memory": attempt(lambda: bytearray(2 << 30)),
    "memfd": errno_of(lambda: os.close(os.memfd_create("probe"))),
    "add_key": errno_of(add_key),
    "keyctl": errno_of(keyctl_read),
    "token": os.environ.get("TRAINYARD_AUTH_TOKEN", "absent"),
}))
"""


def run_probe(tmp_path, pythonpath: str = "", **policy) -> dict:
    home = tmp_path / "home"
    (mine := home / "jobs" / "mine").mkdir(parents=True)
    (other := home / "jobs" / "other").mkdir(parents=True)
    (home / "trainyard.db").write_text("the store")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    rules = sandbox.Policy(read=[str(probe)], write=[str(mine)], **policy)
    env = {**os.environ, "TRAINYARD_AUTH_TOKEN": "a-secret-token-here"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "trainyard.sandbox.enter", rules.to_json(), "--", sys.executable,
                          str(probe), str(home), str(mine), str(other), str(os.getpid())],
                         capture_output=True, text=True, env=env, timeout=120, check=True,
                         cwd=home)  # python -m puts its working folder on sys.path: still unreadable
    return json.loads(out.stdout)


def test_a_sandboxed_process_reaches_only_its_own_folder(tmp_path):
    seen = run_probe(tmp_path, memory_mb=1024)
    assert seen["write own job"] == "allowed"
    for what in ("read store", "write store", "write other job", "read environ", "read shadow"):
        assert seen[what] == "PermissionError", what
    assert seen["fork"] == "PermissionError"
    assert seen["memory"] == "MemoryError"
    assert seen["token"] == "absent"


def test_no_package_folder_opens_the_home_to_reading(tmp_path):
    """A PYTHONPATH entry holding TRAINYARD_HOME is not made readable: the home is hidden."""
    seen = run_probe(tmp_path, pythonpath=str(tmp_path), hidden=[str(tmp_path / "home")])
    assert seen["read store"] == "PermissionError" and seen["write own job"] == "allowed"


def test_a_training_policy_may_start_processes(tmp_path):
    assert run_probe(tmp_path, processes=True)["fork"] == "allowed"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no seccomp filter for this machine")
@pytest.mark.parametrize("processes", [False, True])
def test_no_sandbox_reaches_the_keyring_or_makes_a_memfd(tmp_path, processes):
    """The kernel keys a keyring by uid, and sandboxes run as root share one: a key one job added
    was read by every later sandbox. A memfd's pages escape the memory limit; a training job is
    told ENOSYS, as by a kernel without memfd, so that its libraries fall back to /dev/shm."""
    seen = run_probe(tmp_path, processes=processes)
    assert seen["add_key"] == "EPERM" and seen["keyctl"] == "EPERM"
    assert seen["memfd"] == ("ENOSYS" if processes else "EPERM")


def test_the_sandbox_says_what_confines_user_code():
    state = sandbox.status()
    assert state["available"] and "landlock" in state["mechanism"]
    if namespaces.available():
        assert state["mechanism"].startswith("bubblewrap namespaces + landlock") and state["namespaces"]


def test_without_namespaces_the_sandbox_says_why(monkeypatch):
    monkeypatch.setenv(namespaces.SETTING, "0")
    state = sandbox.status()
    assert state["available"] and not state["namespaces"] and "TRAINYARD_SANDBOX_NAMESPACES=0" in state["reason"]
    assert state["mechanism"].startswith("landlock")


def test_custom_code_is_refused_where_no_sandbox_exists(monkeypatch):
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 0)
    monkeypatch.setenv(namespaces.SETTING, "0")
    monkeypatch.delenv(sandbox.ALLOW_UNSANDBOXED, raising=False)
    with pytest.raises(sandbox.SandboxUnavailable, match="TRAINYARD_ALLOW_UNSANDBOXED"):
        sandbox.require()
    monkeypatch.setenv(sandbox.ALLOW_UNSANDBOXED, "1")
    assert sandbox.require() is False


def test_the_system_report_says_how_user_code_is_confined(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        report = client.get("/api/system").json()
    assert report["sandbox"]["available"] is True and "landlock" in report["sandbox"]["mechanism"]
