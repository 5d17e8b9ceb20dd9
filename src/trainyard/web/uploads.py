"""Saving uploaded files: streamed to disk under HOME/uploads, with a size limit."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from starlette.datastructures import UploadFile  # request.form()'s; fastapi's File(...) subclasses it
from starlette.types import ASGIApp, Receive, Scope, Send

from trainyard.core.errors import TooLarge, UserError

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
                raise TooLarge(f"upload larger than the limit of {max_bytes // 2**20} MiB "
                               "(TRAINYARD_MAX_UPLOAD_MB)")
            out.write(chunk)
    if written == 0:
        path.unlink()
        folder.rmdir()
        raise UserError(f"the uploaded file {file.filename!r} is empty")
    return path


class RequestSizeLimit:
    """ASGI middleware: 413 for a request whose Content-Length is past ``max_bytes``.

    Starlette spools a multipart upload to a temporary file before any handler runs, so without
    this a huge upload would fill the disk first and be refused only afterwards. Requests without
    a Content-Length (chunked) are still limited per file by ``save_upload``.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length", b"")
            if length.isdigit() and int(length) > self.max_bytes:
                from starlette.responses import JSONResponse

                detail = (f"request of {int(length) / 2**20:.1f} MiB is larger than uploads may be "
                          f"(TRAINYARD_MAX_UPLOAD_MB)")
                await JSONResponse({"detail": detail}, status_code=413,
                                   headers={"Connection": "close"})(scope, receive, send)
                return
        await self.app(scope, receive, send)
