"""The server never follows what a job plants in its folder (issue 28 point 3): links named
log.txt, output.txt or events.jsonl are not read through, FIFOs named spec.json or log.txt answer
at once instead of hanging the request, and ``serve`` still ends on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.live_server import free_port
from trainyard.core import server_token
from trainyard.core.events import EventWriter


@pytest.fixture
def api(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        yield client


def plant(api, secret) -> tuple[str, os.PathLike]:
    ctx = api.app.state.ctx
    job = ctx.manager.create("dataset", "planted", {"name": "planted"}, needs={"pool": "dataset"})
    folder = ctx.manager.folder(job.id).work  # what the job writes (core/paths.py)
    with EventWriter(folder) as events:
        events.log("a line of the job's own")
    for name in ("log.txt", "output.txt", "events.jsonl"):
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(secret)
    return job.id, folder


def answered(call, requests: int = 1) -> list:
    """The answers of ``requests`` calls made at once; fails (instead of hanging the suite) when
    any is still waiting after a minute: a FIFO opened for reading would never answer."""
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(call()), daemon=True) for _ in range(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads), "a request hung on a file the job planted"
    return answers


def test_links_the_job_planted_are_not_read_through(api, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$the-hash:19000::::::\n")
    job_id, folder = plant(api, secret)
    log = api.get(f"/api/jobs/{job_id}/log")
    assert log.status_code == 200 and "the-hash" not in log.text and "not followed" in log.text
    doc = api.get(f"/api/jobs/{job_id}")
    assert doc.status_code == 200 and "the-hash" not in doc.text
    with pytest.raises(OSError):
        EventWriter(folder)  # the server's own lines are not written through the link either
    assert secret.read_text() == "root:$6$the-hash:19000::::::\n"


def test_fifos_named_spec_and_log_answer_at_once(api, tmp_path):
    job_id, folder = plant(api, tmp_path / "nothing")
    for name in ("spec.json", "log.txt", "events.jsonl"):
        (folder / name).unlink(missing_ok=True)
        os.mkfifo(folder / name)
    for response in answered(lambda: api.get(f"/api/jobs/{job_id}/log"), 8):
        assert response.status_code == 200 and "not a regular file" in response.text
    for response in answered(lambda: api.get(f"/api/jobs/{job_id}"), 8):
        assert response.status_code == 200
    assert answered(lambda: api.get("/api/datasets").status_code) == [200]


@pytest.mark.slow  # starts `trainyard serve`
def test_serve_ends_on_sigterm_with_many_requests_at_planted_fifos(tmp_path):
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(tmp_path),
           "TRAINYARD_AUTH_TOKEN": "", "TRAINYARD_ALLOWED_HOSTS": ""}
    job = home / "jobs" / "planted"
    job.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", "serve", "--port", str(port)],
                              env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while server_token.read(home) is None:
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.1)
        from trainyard.jobs.context import open_context
        from trainyard.settings import Settings

        ctx = open_context(Settings(home=home, data_roots=[tmp_path]))
        made = ctx.manager.create("dataset", "planted", {"name": "planted"}, needs={"pool": "dataset"})
        folder = ctx.manager.folder(made.id).work  # what the job writes
        for name in ("spec.json", "log.txt"):
            (folder / name).unlink(missing_ok=True)
            os.mkfifo(folder / name)
        headers = {"Authorization": f"Bearer {server_token.read(home)}"}

        def get(path: str) -> int:
            try:
                with urllib.request.urlopen(urllib.request.Request(
                        f"http://127.0.0.1:{port}{path}", headers=headers), timeout=30) as response:
                    return response.status
            except urllib.error.HTTPError as exc:
                return exc.code
            except OSError:
                return -1

        codes = answered(lambda: get(f"/api/jobs/{made.id}/log"), 60)
        assert set(codes) <= {200, 503}, codes
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) is not None
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
