"""A loopback HTTP server for weight downloads: byte ranges, a connection that is cut on
purpose, and the ETag the Hugging Face hub sends with a file (its SHA-256)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Served:
    body: bytes
    etag: str | None = None  # sent as X-Linked-Etag, like the hub
    cut_after: int | None = None  # close the connection after this many bytes, once


@dataclass
class FileServer:
    files: dict[str, Served] = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)
    url: str = ""


def _handler(state: FileServer):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            served = state.files.get(self.path)
            state.requests.append({"path": self.path, "range": self.headers.get("Range")})
            if served is None:
                self.send_error(404)
                return
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            body = served.body[start:]
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body)))
            if served.etag:
                self.send_header("X-Linked-Etag", f'"{served.etag}"')
            self.end_headers()
            if served.cut_after is not None:
                body, served.cut_after = body[:served.cut_after], None
                self.close_connection = True
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def start_server() -> tuple[FileServer, ThreadingHTTPServer]:
    state = FileServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    return state, server
