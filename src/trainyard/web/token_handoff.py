"""``trainyard serve`` keeps the auth token out of its own exec-time environment.

``/proc/<pid>/environ`` shows a process's environment as it was when it was exec'd, to every
process of the same uid that may ptrace it; removing the variable from ``os.environ`` later does
not change it. So when the token is in that environment, `hand_off` re-execs the server (same
pid, same arguments) without it, passing the token through a pipe whose read end the new image
finds in ``TRAINYARD_TOKEN_FD``; `take` reads it and closes the pipe at once, so no child process
inherits it. User code never sees the token: not in its environment (sandbox/policy.py scrubs
it), not in the server's ``environ`` or ``cmdline``, not in any file.
"""

from __future__ import annotations

import os
import sys

from trainyard.core import environment

TOKEN_VARIABLE = environment.SECRET_VARIABLES[0]
FD_VARIABLE = environment.TOKEN_FD_VARIABLE
MAX_TOKEN_BYTES = 4096  # far below a pipe's buffer: the write never blocks


def in_exec_environment(name: str = TOKEN_VARIABLE) -> bool:
    """Whether ``name`` is in the environment this process was exec'd with."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return False
    return any(entry.startswith(name.encode() + b"=") for entry in entries)


def hand_off() -> None:
    """Re-exec this server without the token in its environment, when it is there; else return."""
    token = environment.take_auth_token()  # out of os.environ: nothing this process starts inherits it
    if not token or not in_exec_environment() or len(token.encode()) > MAX_TOKEN_BYTES:
        return
    read_end, write_end = os.pipe()
    os.write(write_end, token.encode())
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    env[FD_VARIABLE] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "trainyard.cli.main", *sys.argv[1:]], env)


def take() -> str | None:
    """The token a `hand_off` passed to this process, read once; None when there was none."""
    fd = environment.take_token_fd()
    if fd is None or not fd.isdigit():
        return None
    try:
        data = os.read(int(fd), MAX_TOKEN_BYTES + 1)
        os.close(int(fd))
    except OSError:
        return None
    return data.decode() or None
