"""Namespace payloads (issue 28): what a custom network's build(), run in a model worker, reaches
of the host. Each one does one thing and the harness judges from outside, as adversary_payloads.py
does:

    net tcp        a connection to a TCP port the harness listens on at 127.0.0.1
    net udp        a datagram to a UDP port the harness binds at 127.0.0.1
    net unix       a connection to a unix socket the harness listens on in its scratch folder
    shm            a file written in /dev/shm: does the host's /dev/shm then hold it?
    proc           the server's own process, found among /proc's by its command line
    uid            the worker's real uid on the host (read from /proc/<pid>/status), when the
                   server runs as root: reached if it is 0
    keyring        a key added to the uid's user keyring (issue 42: as root, every sandbox
                   shares one uid, and a key one job added was read by every later sandbox)
    memfd          a memfd made: its written pages escape every memory bound but a cgroup's

bwrap's namespaces stop the first five (loopback of its own, no host socket in its root, a
private /dev/shm, a PID namespace of its own), the uid drop the sixth (sandbox/namespaces.py),
seccomp the last two (sandbox/seccomp.py).
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

import psutil
from bench.security.adversary_payloads import MARK, Target, _row, classify, custom_model, payload_source


def _run(target: Target, name: str, code: str):
    model, _ = custom_model(target, payload_source("import socket\n" + code), name)
    return classify(target, model)


def net_tcp(target: Target) -> tuple[str, str, str]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        response = _run(target, "net tcp", f"socket.create_connection(('127.0.0.1', {port}), timeout=5).send(b'x')")
        listener.setblocking(False)
        try:
            listener.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    return _row("net tcp (127.0.0.1)", reached, f"HTTP {response.status_code}")


def net_udp(target: Target) -> tuple[str, str, str]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        code = f"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp.getsockname()[1]}))"
        response = _run(target, "net udp", code)
        try:
            reached = bool(udp.recv(16))
        except BlockingIOError:
            reached = False
    return _row("net udp (127.0.0.1)", reached, f"HTTP {response.status_code}")


def net_unix(target: Target) -> tuple[str, str, str]:
    path = str(target.scratch / f"host-{os.getpid()}.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        listener.setblocking(False)
        response = _run(target, "net unix", f"s = socket.socket(socket.AF_UNIX); s.connect({path!r}); s.send(b'x')")
        try:
            listener.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    os.unlink(path)
    return _row("net unix socket", reached, f"HTTP {response.status_code}")


def shm(target: Target) -> tuple[str, str, str]:
    name = f"/dev/shm/{MARK}-{os.getpid()}"
    response = _run(target, "shm", f"open({name!r}, 'w').write('x')")
    reached = os.path.exists(name)
    if reached:
        os.unlink(name)
    return _row("/dev/shm shared", reached, f"HTTP {response.status_code}")


def proc(target: Target) -> tuple[str, str, str]:
    wanted = hashlib.sha256(Path(f"/proc/{target.server_pid}/cmdline").read_bytes()).hexdigest()
    code = ("import hashlib\n"
            "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
            "    try:\n"
            "        data = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
            "    except OSError:\n"
            "        continue\n"
            f"    if hashlib.sha256(data).hexdigest() == {wanted!r}:\n"
            "        raise RuntimeError('server seen at ' + pid)")
    response = _run(target, "proc", code)
    return _row("/proc: the server", "server seen" in response.text, f"HTTP {response.status_code}")


def uid(target: Target) -> tuple[str, str, str]:
    response = _run(target, "uid", "pass")
    uids = set()
    for child in psutil.Process(target.server_pid).children(recursive=True):
        try:
            line = " ".join(child.cmdline())  # the worker's interpreter, not the bwrap around it
            worker = "trainyard.sandbox.child_serve" in line and "trainyard.inference.worker_process" in line
            if worker and "bwrap" not in child.name():
                uids.add(child.uids().real)
        except psutil.Error:
            continue
    if os.geteuid() != 0:
        return "uid (root outside)", "n/a", f"the server is not root (uid {os.geteuid()})"
    if not uids:
        return "uid (root outside)", "error", f"HTTP {response.status_code}, no worker process found"
    return _row("uid (root outside)", 0 in uids, f"HTTP {response.status_code}, worker uids {sorted(uids)}")


ADD_KEY = {"x86_64": 248, "aarch64": 217}  # the syscall's number


def keyring(target: Target) -> tuple[str, str, str]:
    code = ("import ctypes, platform\n"
            f"number = {ADD_KEY!r}[platform.machine()]\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"if libc.syscall(number, b'user', b'{MARK}', b'secret', 6, -4) >= 0:\n"  # @u: the uid's keyring
            "    raise RuntimeError('keyring reached')")
    response = _run(target, "keyring", code)
    return _row("keyring of the uid", "keyring reached" in response.text, f"HTTP {response.status_code}")


def memfd(target: Target) -> tuple[str, str, str]:
    response = _run(target, "memfd", "os.memfd_create('x')\nraise RuntimeError('memfd made')")
    return _row("memfd", "memfd made" in response.text, f"HTTP {response.status_code}")


PAYLOADS = {"net-tcp": net_tcp, "net-udp": net_udp, "net-unix": net_unix, "shm": shm, "proc": proc, "uid": uid,
            "keyring": keyring, "memfd": memfd}
