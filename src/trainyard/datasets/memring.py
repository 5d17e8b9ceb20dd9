"""The decode ring's memory: a memfd, which no other process can open by name.

A POSIX shared-memory block is a file in /dev/shm: any process of the same user (a training job
running a custom network) could open another build's ring by its name and overwrite its pixels
(a dataset built "done" with every image white), and a block of a killed build outlived it. A
memfd (``os.memfd_create``) has no name in any folder: the decode workers get it by descriptor,
inherited across fork; a spawned worker opens its parent's descriptor through
``/proc/<parent>/fd/<n>`` (possible only for a process allowed to trace the parent), checked to
be the very file (inode). It is freed with the last process that holds it, however they end.
"""

from __future__ import annotations

import mmap
import os


class MemfdRing:
    """``size`` bytes of anonymous shared memory, with the ``name``, ``buf``, ``close`` and
    ``unlink`` that the pipeline used of a SharedMemory; ``name`` is what `attach` takes."""

    def __init__(self, size: int, label: str = "trainyard-decode-ring"):
        self.fd = os.memfd_create(label, os.MFD_CLOEXEC)  # inherited by fork, not by exec
        os.ftruncate(self.fd, size)
        self.size = size
        self._map = mmap.mmap(self.fd, size)
        self.buf = memoryview(self._map)
        self.name = f"memfd:{os.getpid()}:{self.fd}:{os.fstat(self.fd).st_ino}:{size}"

    def unlink(self) -> None:
        """Nothing to unlink (it has no name): the descriptor goes, the memory with its last holder."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> None:
        self.buf.release()  # BufferError while a view of it is still held, as SharedMemory.close
        self._map.close()


def attach(name: str) -> memoryview:
    """The memory of the ring `MemfdRing.name` names, from a decode worker: the inherited
    descriptor when this process has it, else the parent's by /proc. OSError when neither."""
    _, pid, fd_text, inode, size = name.split(":")
    fd = int(fd_text)
    try:
        inherited = os.fstat(fd).st_ino == int(inode)
    except OSError:
        inherited = False
    if not inherited:
        fd = os.open(f"/proc/{int(pid)}/fd/{fd}", os.O_RDWR | os.O_CLOEXEC)
        if os.fstat(fd).st_ino != int(inode):
            os.close(fd)
            raise OSError(f"descriptor {fd_text} of process {pid} is not the decode ring")
    try:
        return memoryview(mmap.mmap(fd, int(size)))
    finally:
        if not inherited:
            os.close(fd)
