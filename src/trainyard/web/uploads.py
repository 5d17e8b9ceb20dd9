"""Saving uploaded files: streamed to disk under HOME/uploads, with a size limit."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from fastapi import HTTPException, UploadFile

CHUNK = 1 << 20


def safe_filename(name: str | None, default: str = "upload") -> str:
    """The base name of an uploaded file, reduced to harmless characters."""
    base = Path(name or default).name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")
    return cleaned or default


async def save_upload(file: UploadFile, uploads_dir: Path, max_bytes: int) -> Path:
    """Write the upload to a fresh folder under ``uploads_dir``; 413 past ``max_bytes``."""
    folder = uploads_dir / secrets.token_hex(8)
    folder.mkdir(parents=True)
    path = folder / safe_filename(file.filename)
    written = 0
    with open(path, "wb") as out:
        while chunk := await file.read(CHUNK):
            written += len(chunk)
            if written > max_bytes:
                out.close()
                path.unlink(missing_ok=True)
                folder.rmdir()
                raise HTTPException(413, f"upload larger than the limit of {max_bytes // 2**20} MiB "
                                         "(TRAINYARD_MAX_UPLOAD_MB)")
            out.write(chunk)
    if written == 0:
        path.unlink()
        folder.rmdir()
        raise HTTPException(400, f"the uploaded file {file.filename!r} is empty")
    return path
