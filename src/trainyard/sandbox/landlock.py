"""Landlock, the second layer inside the namespaces (sandbox/namespaces.py): file and TCP rights.

Applied in place with ctypes (no helper binary), so a warm forked checker's child confines itself
(sandbox/zygote.py). Reads only under an allow-list, writes only where the policy says, no TCP
bind/connect unless the policy has network, and (ABI 6) no signals to or abstract sockets of
processes outside the sandbox; Landlock also forbids ptrace-mode access to processes outside
its domain, so a sibling child of the same checker cannot read another's memory.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
from collections.abc import Iterable

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on x86_64 and aarch64
# Landlock file-system rights; those that apply to files (not only to folders) come first.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
HIDDEN_ETC = ("shadow", "gshadow", "shadow-", "gshadow-", "sudoers", "ssh")


@functools.cache
def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


def restrict(read: Iterable[str], write: Iterable[str], network: bool) -> None:
    """Confine this process to reading ``read``, writing ``write``, and TCP only with ``network``."""
    level = abi()
    fs_all = (1 << 13) - 1 | (1 << 13 if level >= 2 else 0) | (_TRUNCATE if level >= 3 else 0) \
        | (_IOCTL_DEV if level >= 5 else 0)
    net_all = 0b11 if level >= 4 else 0  # BIND_TCP, CONNECT_TCP
    scoped = 0b11 if level >= 6 else 0  # abstract UNIX sockets, signals
    attr = struct.pack("QQQ", fs_all, 0 if network else net_all, scoped)
    size = 24 if level >= 6 else 16 if level >= 4 else 8
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        fail("landlock_create_ruleset")
    try:
        reading = _EXECUTE | _READ_FILE | _READ_DIR | (_IOCTL_DEV if level >= 5 else 0)
        for root in read:
            if root == "/etc":
                _allow_except(ruleset, "/etc", HIDDEN_ETC, reading)
            else:
                _allow(ruleset, root, reading)
        _allow(ruleset, "/dev/null", reading | _WRITE_FILE)
        for root in write:
            _allow(ruleset, root, fs_all)
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder this machine (or this namespace) does not have
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            access &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
        rule = struct.pack("=Qi", access, fd)
        if _libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1),
                         ctypes.c_char_p(rule), ctypes.c_uint32(0)) != 0:
            fail(f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def _allow_except(ruleset: int, folder: str, hidden: tuple[str, ...], access: int) -> None:
    # No rule on the folder itself (it would cover every file in it); Landlock needs none to walk
    # through a folder, so the other entries open by name.
    for name in _entries(folder):
        if name not in hidden:
            _allow(ruleset, os.path.join(folder, name), access)


@functools.cache
def _entries(folder: str) -> tuple[str, ...]:
    # Listed once, before this process restricts itself: a warm checker's forked children then
    # list nothing (their parent's own Landlock no longer lets them read the folder itself).
    return tuple(os.listdir(folder))


def fail(what: str) -> None:
    errno = ctypes.get_errno()
    raise OSError(errno, f"sandbox: {what} failed: {os.strerror(errno)}")
