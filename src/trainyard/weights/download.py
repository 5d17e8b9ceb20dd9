"""Fetch one weights file over HTTP: progress, resume from a partial file, hash check, atomic rename.

The bytes go to ``DEST.part`` beside the destination. A cut connection leaves the part file, and
the next call asks the server for the rest (an HTTP Range request); a server that ignores the
range sends the whole file again. Only a complete file whose SHA-256 matches the published hash
(or its prefix) is renamed into place; a mismatch deletes the part file, so no half or tampered
file is ever left where a reader would take it for weights.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from trainyard.core.errors import Conflict, UserError

CHUNK = 1 << 20
TIMEOUT_S = 30.0
_SHA256 = re.compile(r"^[a-f0-9]{64}$")

Progress = Callable[[int, "int | None"], None]  # (bytes done, total bytes or None)


class DownloadError(UserError):
    """The file could not be fetched completely; running the same pull again resumes it."""


class HashMismatch(Conflict):
    """The fetched file is not the published one."""


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


def download(url: str, dest: Path, *, sha256: str | None = None,
             on_progress: Progress | None = None) -> str:
    """Fetch ``url`` into ``dest``; return the file's SHA-256.

    ``sha256`` is the published hash or prefix; without it, a full SHA-256 that the server sends
    as the ETag of the file (as the Hugging Face hub does) is checked instead.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    response = _open(url, have)
    if have and response.status != 206:
        have = 0  # the server sent the whole file: start over
    total = _total(response, have)
    expected = sha256 or _published_etag(response)
    try:
        with response, open(part, "ab" if have else "wb") as out:
            _copy(response, out, have, total, on_progress)
    except (OSError, URLError, http.client.HTTPException) as exc:  # a cut connection: keep the part file to resume
        done = part.stat().st_size if part.exists() else 0
        raise DownloadError(f"download of {dest.name} stopped at {done} of {total or '?'} bytes "
                            f"({exc}); pull again to resume") from None
    done = part.stat().st_size
    if total is not None and done != total:
        raise DownloadError(f"download of {dest.name} stopped at {done} of {total} bytes; pull again to resume")
    try:
        actual = check_hash(part, expected, f"the download of {dest.name}")
    except HashMismatch:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, dest)
    return actual


def _open(url: str, have: int):
    headers = {"User-Agent": "trainyard", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        return urlopen(Request(url, headers=headers), timeout=TIMEOUT_S)
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


def _copy(response, out, done: int, total: int | None, on_progress: Progress | None) -> None:
    if on_progress:
        on_progress(done, total)
    while block := response.read(CHUNK):
        out.write(block)
        done += len(block)
        if on_progress:
            on_progress(done, total)
    out.flush()
    os.fsync(out.fileno())
