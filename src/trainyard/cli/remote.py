"""``trainyard classify`` through a running server: the server keeps the model loaded and warm.

A CLI process that classified by itself would import torch and load the checkpoint every time
(seconds, most of a short classify). When a server of the same home answers on the configured
host and port, the images are uploaded to ``POST /api/models/{id}/classify`` instead, in
requests of at most the server's 64 images. Anything but a clean answer (no server, another
home's server that does not know the model, an image it refuses) returns None, and the caller
classifies locally: the same results and messages as without a server, only slower. Every
request carries the server's credential (`credential`), on localhost too.
"""

from __future__ import annotations

import json
import socket
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from trainyard.core import server_token
from trainyard.settings import Settings

BATCH = 64  # the server's limit per classify request (web/routers/inference.py MAX_IMAGES)
CONNECT_TIMEOUT_S = 0.5  # a local server accepts at once; without one the port refuses at once
ANSWER_TIMEOUT_S = 600.0  # a first request may export the snapshot to ONNX before answering


def classify_via_server(settings: Settings, model_id: str, images: list[Path], *, top: int,
                        epoch: float | None) -> list[dict] | None:
    """The classify results of a running server, or None where the CLI must classify itself."""
    host, port = _address(settings)
    if not _listening(host, port):
        return None
    query = urllib.parse.urlencode({"top": top, **({"epoch": epoch} if epoch is not None else {})})
    server = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    url = f"{server}/api/models/{urllib.parse.quote(model_id)}/classify?{query}"
    results: list[dict] = []
    for start in range(0, len(images), BATCH):  # read a request's images at a time, not all at once
        try:
            files = [(str(path), path.read_bytes()) for path in images[start:start + BATCH]]
        except OSError:
            return None  # the local path reports the unreadable file exactly as it always has
        answer = _post(url, files, credential(settings))
        if answer is None:
            return None
        results += answer["results"]
    # The server names uploads by their sanitised file name; the CLI names them as given.
    return [{**result, "image": str(path)} for result, path in zip(results, images, strict=True)]


def credential(settings: Settings) -> str:
    """The token to send: the personal one of ``trainyard login``, else TRAINYARD_AUTH_TOKEN,
    else the one the server of this home wrote for its user (core/server_token.py); "" when
    none (the server then refuses: 401)."""
    return (server_token.read(settings.home, server_token.LOGIN_FILE_NAME) or settings.auth_token
            or server_token.read(settings.home) or "")


def _address(settings: Settings) -> tuple[str, int]:
    host = settings.host if settings.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    return host, settings.port


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def _post(url: str, files: list[tuple[str, bytes]], token: str) -> dict | None:
    body, content_type = _multipart(files)
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):  # refused, timed out, an HTTP error status, not JSON
        return None
    results = answer.get("results") if isinstance(answer, dict) else None
    return answer if isinstance(results, list) and len(results) == len(files) else None


def _multipart(files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body with each file as an ``images`` part."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, data in files:
        filename = name.replace('"', "_").replace("\r", "_").replace("\n", "_")
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="images"; filename="{filename}"\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
