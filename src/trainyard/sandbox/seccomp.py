"""seccomp for every sandboxed process: no keyring, no memfd; for checks and workers also no new
processes.

Every sandbox: add_key, keyctl and request_key fail with EPERM. Run as root, sandboxes drop to
one uid without a user namespace, and the kernel keys a user's keyring by uid: a key one job's
code added was read by every later sandbox and by the host's processes of that uid, a channel
between users' jobs. Nothing trainyard runs uses keys.

memfd_create is refused everywhere: a memfd's pages that are written but never mapped count
against neither RLIMIT_AS nor the size of the sandbox's tmpfs, so they escape the memory limit
(sandbox/policy.py; a training job held 4.4 GiB under a 1 GiB limit, its memfd unbounded). A
check or a worker gets EPERM. A training job gets ENOSYS, what a kernel without memfd answers:
the libraries it loads (torch's asmjit, glibc) then fall back to a file in /dev/shm, the
sandbox's sized tmpfs, instead of failing.

Checks and workers (no processes): fork, vfork and clone without CLONE_THREAD fail with EPERM
(threads still work); clone3 answers ENOSYS, so that glibc falls back to clone and posix_spawn
fails. A training job may start processes, counted by its supervisor (sandbox/supervisor.py).
"""

from __future__ import annotations

import ctypes
import platform
import struct
from typing import NamedTuple

from trainyard.sandbox.landlock import fail

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_SECCOMP = 22
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
EPERM, ENOSYS, ALLOW = 0x00050000 | 1, 0x00050000 | 38, 0x7FFF0000
CLONE3 = 435  # the same number on both architectures


class _Numbers(NamedTuple):
    arch: int  # AUDIT_ARCH_*
    forks: tuple[int, ...]  # fork, vfork (aarch64 has only clone)
    clone: int
    memfd: int
    keyring: tuple[int, ...]  # add_key, request_key, keyctl


NUMBERS = {
    "x86_64": _Numbers(0xC000003E, (57, 58), 56, 319, (248, 249, 250)),
    "aarch64": _Numbers(0xC00000B7, (), 220, 279, (217, 218, 219)),
}


def program(numbers: _Numbers, processes: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program: (code, jt, jf, k) for each instruction."""
    prog = [(_LD, 0, 0, 4), (_JEQ, 1, 0, numbers.arch), (_RET, 0, 0, EPERM),  # another ABI: refused
            (_LD, 0, 0, 0), (_JGE, 0, 1, 0x40000000), (_RET, 0, 0, EPERM)]  # x32 numbers: refused
    refused = [(n, EPERM) for n in numbers.keyring]
    refused.append((numbers.memfd, ENOSYS if processes else EPERM))
    if not processes:
        refused += [(n, EPERM) for n in numbers.forks] + [(CLONE3, ENOSYS)]
    for number, answer in refused:
        prog += [(_JEQ, 0, 1, number), (_RET, 0, 0, answer)]
    if not processes:  # clone: only a thread (CLONE_THREAD in its flags, argument 0)
        prog += [(_JEQ, 0, 3, numbers.clone), (_LD, 0, 0, 16), (_JSET, 1, 0, 0x00010000), (_RET, 0, 0, EPERM)]
    return prog + [(_RET, 0, 0, ALLOW)]


def install(processes: bool) -> None:
    """Install the filter on this process (its threads and children started later inherit it);
    OSError if refused. ``processes``: whether it may start processes (a training job)."""
    numbers = NUMBERS.get(platform.machine())
    if numbers is None:
        return
    prog = program(numbers, processes)
    code = b"".join(struct.pack("HBBI", *op) for op in prog)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("HxxxxxxQ", len(prog), ctypes.addressof(buffer))
    if _libc.prctl(_PR_SET_SECCOMP, 2, ctypes.c_char_p(fprog), 0, 0) != 0:
        fail("seccomp")


def no_new_processes() -> None:
    """The filter of a check or a worker: no processes, no memfd, no keyring."""
    install(processes=False)
