"""Unpack an uploaded .zip, .tar or .tar.gz of images without trusting its contents.

Every member is checked before anything is written: no absolute paths, no ``..``, no links or
device files, bounded member count and declared size. Bytes are counted again while writing,
because a member's declared size can lie. A tar (gzipped or not) is streamed, and its
uncompressed bytes are counted at each member's header, skipped members included, before the
stream reads through the member: a bomb is refused at its first header past the bound, not
after the server has unpacked it (a 9.4 MB upload was refused after 1.88 GB and 131 s).
We write each file ourselves (never extractall), so no permission bits, owners or timestamps
from the archive are applied.
"""

from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO

from trainyard.core.errors import UserError

CHUNK = 1 << 20
# Images barely compress (JPEG, PNG), so an archive that unpacks to 200 times its size is a zip
# bomb, not a dataset; the floor leaves small archives of raw BMP or PGM images alone.
MAX_RATIO = 200
RATIO_FLOOR = 64 * 2**20
# Folders some archivers add that never hold user images (macOS resource forks).
JUNK_TOP_LEVEL = {"__MACOSX"}


class ArchiveError(UserError):
    """An archive that is refused; the message names the offending member."""


@dataclass
class _Member:
    name: str
    is_dir: bool
    size: int
    open: Callable[[], IO[bytes]]


def _check_name(raw: str) -> PurePosixPath:
    """Return a safe relative path for a member name, or raise ArchiveError."""
    name = raw.replace("\\", "/")  # Windows zips may use backslashes
    path = PurePosixPath(name)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"archive member {raw!r} has an absolute path")
    if ".." in path.parts:
        raise ArchiveError(f"archive member {raw!r} has a '..' component")
    return path


def _zip_members(zf: zipfile.ZipFile) -> Iterator[_Member]:
    for info in zf.infolist():
        mode = info.external_attr >> 16  # Unix mode bits; the type bits are often left at 0
        if stat.S_ISLNK(mode):
            raise ArchiveError(f"archive member {info.filename!r} is a symbolic link")
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ArchiveError(f"archive member {info.filename!r} is not a plain file")
        yield _Member(info.filename, info.is_dir(), info.file_size, partial(zf.open, info))


def _tar_members(tf: tarfile.TarFile, max_bytes: int) -> Iterator[_Member]:
    for info in tf:
        if info.offset_data + info.size > max_bytes:  # the stream's uncompressed bytes so far
            raise ArchiveError(f"archive unpacks to more than {max_bytes} bytes (at {info.name!r})")
        if info.issym() or info.islnk():
            raise ArchiveError(f"archive member {info.name!r} is a link")
        if not (info.isfile() or info.isdir()):
            raise ArchiveError(f"archive member {info.name!r} is a device or special file")
        yield _Member(info.name, info.isdir(), info.size, _tar_opener(tf, info))


def _tar_opener(tf: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[], IO[bytes]]:
    def open_member() -> IO[bytes]:
        f = tf.extractfile(info)
        # extractfile is None only for non-files; those were refused above and dirs are never opened
        assert f is not None
        return f
    return open_member


def _open_archive(archive: Path, max_bytes: int) -> tuple[zipfile.ZipFile | tarfile.TarFile, Iterator[_Member]]:
    if zipfile.is_zipfile(archive):
        zf = zipfile.ZipFile(archive)
        return zf, _zip_members(zf)
    try:
        # "r|*" streams: members are checked and written in one pass, even for .tar.gz.
        tf = tarfile.open(archive, "r|*")
    except (tarfile.TarError, OSError) as e:
        raise ArchiveError(f"{archive.name} is not a zip or tar archive ({e})") from None
    return tf, _tar_members(tf, max_bytes)


def member_names(archive: Path, limit: int, max_ratio: int = MAX_RATIO) -> list[str]:
    """The names of the archive's first ``limit`` members, read without unpacking any (a tar
    streams only as far as they go, and no further than `bound` allows), to tell what kind of
    archive it is before its size."""
    handle, members = _open_archive(Path(archive), bound(Path(archive), 2**63, max_ratio))
    names: list[str] = []
    try:
        for member in members:
            names.append(member.name)
            if len(names) >= limit:
                break
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, RuntimeError) as e:
        raise ArchiveError(f"damaged archive {Path(archive).name}: {e}") from None
    finally:
        handle.close()
    return names


def safe_extract(
    archive: Path,
    dest: Path,
    max_total_bytes: int = 20 * 2**30,
    max_members: int = 1_000_000,
    max_ratio: int = MAX_RATIO,
) -> Path:
    """Extract ``archive`` into ``dest`` and return the root of its contents.

    It may unpack to ``max_total_bytes``, and to no more than ``max_ratio`` times its own size
    (`bound`; checked at each tar header and as bytes are written, before the disk fills).

    The root is the single top-level folder if the archive holds only one, else ``dest``.
    Raises ArchiveError for refused or damaged archives; ``dest`` may then hold a partial
    extraction, which the caller deletes.
    """
    archive, dest = Path(archive), Path(dest)
    max_total_bytes = bound(archive, max_total_bytes, max_ratio)
    dest.mkdir(parents=True, exist_ok=True)
    handle, members = _open_archive(archive, max_total_bytes)
    total = count = 0
    try:
        for member in members:
            count += 1
            if count > max_members:
                raise ArchiveError(f"archive has more than {max_members} members")
            rel = _check_name(member.name)
            if not rel.parts or rel.parts[0] in JUNK_TOP_LEVEL:
                continue
            target = dest.joinpath(*rel.parts)
            if member.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            total += member.size
            if total > max_total_bytes:
                raise ArchiveError(f"archive unpacks to more than {max_total_bytes} bytes (at {member.name!r})")
            total = _write_member(member, target, total - member.size, max_total_bytes)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, RuntimeError) as e:
        raise ArchiveError(f"damaged archive {archive.name}: {e}") from None
    finally:
        handle.close()
    return _content_root(dest)


def bound(archive: Path, max_total_bytes: int, max_ratio: int = MAX_RATIO) -> int:
    """The most bytes ``archive`` may unpack to: ``max_total_bytes``, and ``max_ratio`` times its
    own size above the floor."""
    return min(max_total_bytes, max(RATIO_FLOOR, max_ratio * _size(archive)))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # missing: _open_archive says so in its own words


def _write_member(member: _Member, target: Path, written_before: int, limit: int) -> int:
    """Copy one member to ``target``, counting real bytes; return the new running total."""
    target.parent.mkdir(parents=True, exist_ok=True)
    total = written_before
    with member.open() as src, open(target, "wb") as out:
        while chunk := src.read(CHUNK):
            total += len(chunk)
            if total > limit:
                raise ArchiveError(f"archive unpacks to more than {limit} bytes (at {member.name!r})")
            out.write(chunk)
    return total


def _content_root(dest: Path) -> Path:
    entries = [p for p in dest.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return dest
