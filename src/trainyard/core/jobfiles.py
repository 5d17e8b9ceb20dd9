"""The one way the server opens a file in a job's folder, which the job (user code) writes.

A job may plant anything there: a link named ``log.txt`` to ``/etc/shadow``, a ``checkpoints``
folder that is a link elsewhere, a FIFO named ``spec.json`` that hangs whoever opens it. So every
open here is relative to a descriptor of the job folder and refuses links on every component
(``openat2`` with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it, Linux 5.6+;
else a walk of ``O_NOFOLLOW`` opens, one component at a time), is non-blocking (a FIFO opens at
once), keeps regular files only (``fstat``, else `UnsafeFile`) and reads at most a bound. Appends
(the server's own lines, a job's ``output.txt``) open the same way, created if missing.
Torch-free, like all of core.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import secrets
import stat
from typing import Any

MAX_JSON_BYTES = 16 << 20  # a spec.json is a few kB; anything larger is not one
_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_libc = ctypes.CDLL(None, use_errno=True)
_have_openat2: bool | None = None  # unknown until first tried


class UnsafeFile(OSError):
    """A job-folder file the server will not read: a link, a FIFO, a device, a folder."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _openat2(dir_fd: int, relative: str, flags: int, mode: int) -> int | None:
    """openat2 beneath ``dir_fd`` without links; None where the kernel lacks the call."""
    global _have_openat2
    if _have_openat2 is False:
        return None
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0,
                   _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_OPENAT2, dir_fd, relative.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        _have_openat2 = True
        return fd
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM) and not _have_openat2:  # absent, or refused by a seccomp filter
        _have_openat2 = False
        return None
    if code in (errno.ELOOP, errno.EXDEV):
        raise UnsafeFile(code, f"{relative} is or passes through a link: not followed")
    if code == errno.ENXIO:  # a FIFO opened for writing, no reader: not a file either
        raise UnsafeFile(code, f"{relative} is not a regular file: not read")
    raise OSError(code, os.strerror(code), relative)


def _walk(dir_fd: int, relative: str, flags: int, mode: int) -> int:
    """The same open as `_openat2`, by one ``O_NOFOLLOW`` open per component."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise UnsafeFile(errno.EXDEV, f"{relative} is not a name inside the job folder")
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            try:
                following = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                    dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeFile(exc.errno, f"{relative} passes through a link or non-folder") from None
                raise
            os.close(current)
            current = following
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=current)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeFile(exc.errno, f"{relative} is a link: not followed") from None
            if exc.errno == errno.ENXIO:
                raise UnsafeFile(exc.errno, f"{relative} is not a regular file: not read") from None
            raise
    finally:
        os.close(current)


def open_beneath(folder: str | os.PathLike, relative: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of ``folder/relative``: no link on any component, never blocking, a regular
    file only (else `UnsafeFile`); FileNotFoundError as open gives it."""
    root = _open_folder(folder)
    try:
        flags |= os.O_NONBLOCK | os.O_NOCTTY
        fd = _openat2(root, relative, flags, mode)
        if fd is None:
            fd = _walk(root, relative, flags, mode)
    finally:
        os.close(root)
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise UnsafeFile(errno.EINVAL, f"{relative} is not a regular file: not read")
    if flags & (os.O_WRONLY | os.O_RDWR) and status.st_nlink > 1:  # a hard link to a file elsewhere
        os.close(fd)
        raise UnsafeFile(errno.EMLINK, f"{relative} has other names (a hard link): not written")
    os.set_blocking(fd, True)  # a regular file never blocks anyway; later reads are plain
    return fd


def _open_folder(folder: str | os.PathLike) -> int:
    """A descriptor of the folder itself, refused when its last component is a link: a job made
    before the split could have planted ``work`` -> elsewhere (core/paths.py's JobFolder)."""
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(folder):
            raise UnsafeFile(errno.ELOOP, f"{os.fspath(folder)} is a link: not followed") from None
        raise


def read_bytes(folder: str | os.PathLike, relative: str, max_bytes: int, *, tail: bool = False,
               offset: int = 0) -> bytes:
    """At most ``max_bytes`` of the file from ``offset`` (or its last ``max_bytes`` with ``tail``)."""
    fd = open_beneath(folder, relative)
    try:
        size = os.fstat(fd).st_size
        if tail:
            offset = max(0, size - max_bytes)
        # not a buffer of the whole bound: a file grows between fstat and pread at most by a little
        return os.pread(fd, min(max_bytes, max(size - offset, 0) + 65536), offset)
    finally:
        os.close(fd)


def read_json(folder: str | os.PathLike, relative: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON of a job-folder file; ValueError when it is not JSON or larger than the bound."""
    data = read_bytes(folder, relative, max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{relative} is larger than {max_bytes} bytes: not read")
    return json.loads(data)


def tail_text(folder: str | os.PathLike, relative: str, max_bytes: int) -> str:
    """The end of a job's text file ("" when missing; one line saying so when it is not a file)."""
    try:
        return read_bytes(folder, relative, max_bytes, tail=True).decode(errors="replace")
    except FileNotFoundError:
        return ""
    except UnsafeFile as exc:
        return f"[{exc.strerror}]\n"


def open_append(folder: str | os.PathLike, relative: str) -> int:
    """A descriptor appending to the job-folder file (created 0644 when missing), as `open_beneath`."""
    return open_beneath(folder, relative, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def write_text(folder: str | os.PathLike, relative: str, text: str) -> None:
    """Replace the job-folder file's content with ``text`` (created 0644 when missing), opened as
    `open_beneath` does; a file with another name elsewhere (a hard link) is `UnsafeFile`, never
    truncated (the job could have linked one it may not write)."""
    fd = open_beneath(folder, relative, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_nlink != 1:
            raise UnsafeFile(errno.EMLINK, f"{relative} has another name (a hard link): not written")
        os.ftruncate(fd, 0)
        data = text.encode()
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def replace(folder: str | os.PathLike, name: str, data: bytes) -> None:
    """Replace ``folder/name`` with ``data`` atomically (a temporary file beside it, renamed over
    it), relative to a descriptor of ``folder`` that is not a link (else `UnsafeFile`): what the
    job planted at ``name`` is replaced, never followed. The file is 0644 (its readers may run as
    another uid)."""
    root = _open_folder(folder)
    try:
        temporary = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=root)
        try:
            try:
                os.fchmod(fd, 0o644)  # whatever the umask
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, name, src_dir_fd=root, dst_dir_fd=root)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=root)
            raise
    finally:
        os.close(root)


def regular_names(folder: str | os.PathLike, relative: str) -> list[str]:
    """The names of the regular files (not links) in a job's subfolder; [] when it is missing or
    is not a real folder."""
    try:
        root = _open_folder(folder)
    except OSError:
        return []
    try:
        sub = os.open(relative, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
    except OSError:
        return []
    finally:
        os.close(root)
    try:
        return sorted(e.name for e in os.scandir(sub) if e.is_file(follow_symlinks=False))
    finally:
        os.close(sub)
