"""seccomp for checks and model workers: no new processes, no memfd.

fork, vfork and clone without CLONE_THREAD fail with EPERM (threads still work); clone3 answers
ENOSYS, so that glibc falls back to clone and posix_spawn fails. memfd_create fails with EPERM:
a memfd's pages that are written but never mapped count against neither RLIMIT_AS nor the
size of the sandbox's tmpfs, so they would escape the memory limit (sandbox/policy.py).
"""

from __future__ import annotations

import ctypes
import platform
import struct

from trainyard.sandbox.landlock import fail

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_SECCOMP = 22


def no_new_processes() -> None:
    """Install the filter on this process (and its threads started later); OSError if refused."""
    machine = platform.machine()
    denied: tuple[int, ...]
    if machine == "x86_64":
        arch, denied, clone = 0xC000003E, (57, 58, 319), 56  # fork, vfork, memfd_create; clone
    elif machine == "aarch64":
        arch, denied, clone = 0xC00000B7, (279,), 220  # memfd_create; clone
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
        fail("seccomp")
