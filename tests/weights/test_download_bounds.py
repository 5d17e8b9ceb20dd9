"""A weights server cannot make a pull fill the disk, hang for ever or pass as checked.

Each test starts its own loopback server that misbehaves on purpose: one sends far more bytes
than the file has, one announces too many, one stops sending, one drips a byte at a time; and a
disk that fills up mid-download.
"""

from __future__ import annotations

import dataclasses
import errno
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.weights.file_server import Served
from tests.weights.fixtures import HUB_PATH, TIMM_ENTRY
from trainyard.weights import catalogue
from trainyard.weights import download as download_module
from trainyard.weights.download import DiskFull, DownloadError, TooLarge, download
from trainyard.weights.store import WeightsStore


class Misbehaving:
    """A loopback server whose one file is sent the way ``mode`` says."""

    def __init__(self, mode: str, size: int = 200_000):
        self.mode, self.size, self.stop = mode, size, threading.Event()
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                state.serve(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/w.pth"

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        if self.mode == "announce":
            handler.send_header("Content-Length", str(10**12))
        elif self.mode in ("stall", "drip"):
            handler.send_header("Content-Length", str(self.size))
        handler.end_headers()
        try:
            if self.mode == "flood":  # no length: the body ends when the connection does
                while not self.stop.is_set():
                    handler.wfile.write(b"\0" * 65536)
            elif self.mode == "stall":
                handler.wfile.write(b"\0" * (self.size // 2))
                handler.wfile.flush()
                self.stop.wait(120)
            elif self.mode == "drip":
                while not self.stop.wait(0.05):
                    handler.wfile.write(b"\0")
                    handler.wfile.flush()
        except OSError:  # the client gave up: what the test wants
            pass

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def misbehaving():
    servers: list[Misbehaving] = []

    def start(mode: str) -> Misbehaving:
        servers.append(Misbehaving(mode))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_a_server_that_sends_more_than_the_file_has_is_cut_off(tmp_path, misbehaving):
    server = misbehaving("flood")
    with pytest.raises(TooLarge, match="more than 100000 bytes"):
        download(server.url, tmp_path / "w.pth", max_bytes=100_000)
    assert not list(tmp_path.iterdir())  # no part file left to resume from


def test_a_server_that_announces_too_much_is_refused_before_any_byte(tmp_path, misbehaving):
    server = misbehaving("announce")
    with pytest.raises(TooLarge, match="announced 1000000000000 bytes"):
        download(server.url, tmp_path / "w.pth", max_bytes=100_000)
    assert not list(tmp_path.iterdir())


def test_a_pull_is_bounded_by_the_catalogues_size(tmp_path, file_server, hub_file, monkeypatch):
    file_server.files[HUB_PATH] = hub_file
    entry = catalogue.find_entry(TIMM_ENTRY)
    assert len(hub_file.body) > 200_000
    small = dataclasses.replace(entry, size_mb=0.05)  # the catalogue says ~50 kB; the server sends more
    monkeypatch.setattr(catalogue, "find_entry", lambda name: small)
    store = WeightsStore(tmp_path / "weights")
    with pytest.raises(TooLarge, match="more than"):
        store.pull(TIMM_ENTRY)
    assert not store.resolve(TIMM_ENTRY)["present"]
    assert not list(store.folder.rglob("*.part"))


def test_a_stalled_server_ends_the_pull_and_frees_the_entry(tmp_path, misbehaving, monkeypatch):
    monkeypatch.setattr(download_module, "STALL_S", 1.0)
    server = misbehaving("stall")
    monkeypatch.setattr(catalogue, "download_url", lambda entry, mirror="": server.url)
    store = WeightsStore(tmp_path / "weights")
    with pytest.raises(DownloadError, match=r"no data for 1 s\); pull again to resume"):
        store.pull(TIMM_ENTRY)
    with store.lock(TIMM_ENTRY):  # released: another pull of the entry may start
        pass


def test_a_dripping_server_meets_the_overall_deadline(tmp_path, misbehaving, monkeypatch):
    monkeypatch.setattr(download_module, "DEADLINE_S", 1.0)
    server = misbehaving("drip")
    started = time.monotonic()
    with pytest.raises(DownloadError, match="did not complete within 1 s"):
        download(server.url, tmp_path / "w.pth")
    assert time.monotonic() - started < 60  # not the hour a byte a time would take


def test_a_full_disk_deletes_the_part_file_and_says_so(tmp_path, file_server, monkeypatch):
    file_server.files["/w.pth"] = Served(b"weights" * 100_000)

    class FullDisk:
        def __init__(self, file):
            self.file = file

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.file, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

    monkeypatch.setattr(download_module, "open", lambda *a, **k: FullDisk(open(*a, **k)), raising=False)
    with pytest.raises(DiskFull, match="disk full"):
        download(f"{file_server.url}/w.pth", tmp_path / "w.pth")
    assert not list(tmp_path.iterdir())


def test_a_timm_pull_without_a_published_hash_is_stored_as_unverified(tmp_path, file_server, hub_file):
    file_server.files[HUB_PATH] = Served(hub_file.body)  # a mirror that sends no ETag
    store = WeightsStore(tmp_path / "weights")
    row = store.pull(TIMM_ENTRY)
    assert row["present"] and row["verified"] is False
    assert store.list("test_resnet", present=True)[0]["verified"] is False
    store.remove(TIMM_ENTRY)
    file_server.files[HUB_PATH] = hub_file  # the hub's ETag: checked
    assert store.pull(TIMM_ENTRY)["verified"] is True
