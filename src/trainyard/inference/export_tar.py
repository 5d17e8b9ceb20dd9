"""Writing an exported archive as a reproducible .tar.gz: fixed member order, one date for
every member, owner 0, and a gzip header without the name or time of the run."""

from __future__ import annotations

import gzip
import io
import tarfile
from typing import IO


def write_tar_gz(fileobj: IO[bytes], top: str, members: list[tuple[str, bytes, int]], mtime: int) -> None:
    """A gzip'd tar of ``members`` under ``top/``, with nothing that varies between runs."""
    # filename="" and mtime=0 keep the name and time of this run out of the gzip header.
    with gzip.GzipFile(filename="", mode="wb", fileobj=fileobj, mtime=0, compresslevel=6) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.addfile(_tar_info(f"{top}/", tarfile.DIRTYPE, 0o755, 0, mtime))
            for name, data, mode in members:
                tar.addfile(_tar_info(f"{top}/{name}", tarfile.REGTYPE, mode, len(data), mtime),
                            io.BytesIO(data))


def _tar_info(name: str, kind: bytes, mode: int, size: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
