"""Fetch one weights file over HTTP: progress, resume from a partial file, hash check, atomic rename.

The bytes go to ``DEST.part`` beside the destination. A cut connection leaves the part file, and
the next call asks the server for the rest (an HTTP Range request); a server that ignores the
range sends the whole file again. Only a complete file whose SHA-256 matches the published hash
(or its prefix) is renamed into place; a mismatch deletes the part file, so no half or tampered
file is ever left where a reader would take it for weights.

A download is bounded: never more bytes than ``max_bytes`` (the catalogue's size with a small
margin, or what the server announced), no more than `DEADLINE_S` in all, and a connection that
sends nothing for `STALL_S` ends the pull (the caller's lock is released as the error leaves).
A full disk deletes the part file and says so. `Fetched.verified` says whether a published hash
was checked: a file whose source gives none is stored as unverified, never shown as checked.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from trainyard.core.errors import Conflict, UserError

CHUNK = 1 << 20
STALL_S = 30.0  # no byte for this long ends the pull (the socket's timeout)
DEADLINE_S = 4 * 3600.0  # the whole download, however slowly the bytes come
UNSIZED_MAX_BYTES = 4 << 30  # a file neither the catalogue nor the server gives a size for
_SHA256 = re.compile(r"^[a-f0-9]{64}$")

Progress = Callable[[int, "int | None"], None]  # (bytes done, total bytes or None)


class DownloadError(UserError):
    """The file could not be fetched completely; running the same pull again resumes it."""


class HashMismatch(Conflict):
    """The fetched file is not the published one."""


class TooLarge(DownloadError):
    """The server sent (or announced) more bytes than the file can have: refused, deleted."""


class DiskFull(DownloadError):
    """No space left for the file: the part file is deleted."""

    http_status = 507


@dataclass(frozen=True)
class Fetched:
    """A downloaded file's SHA-256, and whether a published hash vouched for it."""

    sha256: str
    verified: bool


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def check_hash(path: Path, expected: str | None, what: str) -> str:
    """The file's SHA-256; HashMismatch if ``expected`` (a hash or its prefix) does not match."""
    actual = sha256_of(path)
    if expected and not actual.startswith(expected.lower()):
        raise HashMismatch(f"{what} has SHA-256 {actual[:12]}..., not the published {expected[:12]}...: "
                           "the file is damaged or not the published one")
    return actual


def download(url: str, dest: Path, *, sha256: str | None = None, max_bytes: int | None = None,
             on_progress: Progress | None = None) -> Fetched:
    """Fetch ``url`` into ``dest``; return its SHA-256 and whether a published hash was checked.

    ``sha256`` is the published hash or prefix; without it, a full SHA-256 that the server sends
    as the ETag of the file (as the Hugging Face hub does) is checked instead. ``max_bytes``
    bounds the file (None: what the server announces, at most `UNSIZED_MAX_BYTES`).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    response = _open(url, have)
    if have and response.status != 206:
        have = 0  # the server sent the whole file: start over
    total = _total(response, have)
    limit = _limit(dest, total, max_bytes, part)
    expected = sha256 or _published_etag(response)
    try:
        with response, open(part, "ab" if have else "wb") as out:
            _copy(response, out, have, total, limit, on_progress)
    except TooLarge:
        part.unlink(missing_ok=True)
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            part.unlink(missing_ok=True)
            raise DiskFull(f"disk full: no space left on device for {dest.name} in {dest.parent}; "
                           "free some space and pull again") from None
        raise _stopped(dest, part, total, exc) from None
    except (URLError, http.client.HTTPException) as exc:  # a cut connection: keep the part file to resume
        raise _stopped(dest, part, total, exc) from None
    done = part.stat().st_size
    if total is not None and done != total:
        raise DownloadError(f"download of {dest.name} stopped at {done} of {total} bytes; pull again to resume")
    try:
        actual = check_hash(part, expected, f"the download of {dest.name}")
    except HashMismatch:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, dest)
    return Fetched(actual, verified=bool(expected))


def _stopped(dest: Path, part: Path, total: int | None, exc: BaseException) -> DownloadError:
    done = part.stat().st_size if part.exists() else 0
    why = f"no data for {STALL_S:g} s" if isinstance(exc, TimeoutError) else str(exc)
    return DownloadError(f"download of {dest.name} stopped at {done} of {total or '?'} bytes "
                         f"({why}); pull again to resume")


def _limit(dest: Path, total: int | None, max_bytes: int | None, part: Path) -> int:
    if max_bytes is not None and total is not None and total > max_bytes:
        part.unlink(missing_ok=True)
        raise TooLarge(f"the server announced {total} bytes for {dest.name}, more than its published size "
                       f"allows ({max_bytes}); refused")
    return max_bytes if max_bytes is not None else (total or UNSIZED_MAX_BYTES)


def _open(url: str, have: int):
    headers = {"User-Agent": "trainyard", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        return urlopen(Request(url, headers=headers), timeout=STALL_S)
    except HTTPError as exc:
        if exc.code == 416 and have:  # we hold every byte already: fetch it anew to be sure
            return _open(url, 0)
        raise DownloadError(f"{url} answered HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"cannot reach {url} ({reason}); without internet, set "
                            "TRAINYARD_WEIGHTS_URL / HF_ENDPOINT to a mirror or import the file") from None


def _total(response, have: int) -> int | None:
    length = response.headers.get("Content-Length")
    return have + int(length) if length and length.isdigit() else None


def _published_etag(response) -> str | None:
    for header in ("X-Linked-Etag", "ETag"):
        value = (response.headers.get(header) or "").strip('"').removeprefix("W/").strip('"').lower()
        if _SHA256.match(value):
            return value
    return None


def _copy(response, out, done: int, total: int | None, limit: int, on_progress: Progress | None) -> None:
    if on_progress:
        on_progress(done, total)
    deadline = time.monotonic() + DEADLINE_S
    read = getattr(response, "read1", response.read)  # what has come, so the deadline is seen
    while block := read(CHUNK):
        done += len(block)
        if done > limit:
            raise TooLarge(f"the server sent more than {limit} bytes, more than the file can have; refused")
        if time.monotonic() > deadline:  # not an OSError: the part file is kept, a pull resumes
            raise DownloadError(f"the download did not complete within {DEADLINE_S:g} s; pull again to resume")
        out.write(block)
        if on_progress:
            on_progress(done, total)
    out.flush()
    os.fsync(out.fileno())
