"""Network checks run in a bounded pool of their own with a timeout, never in asyncio's default
pool (where eight slow checks held a new job queued for 52 s)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from trainyard.jobs.scheduling.resources import Pools
from trainyard.networks import cache as network_cache
from trainyard.networks.check_gate import CheckGate
from trainyard.web.app import create_app


def test_checks_run_in_their_own_pool_with_the_configured_timeout(settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_CHECK_TIMEOUT_S", "123")
    settings = type(settings)(home=settings.home, data_roots=settings.data_roots)
    seen = []

    def fake_check(source, num_classes, in_channels, image_size, timeout, **kwargs):
        seen.append((threading.current_thread().name, timeout))
        return {"ok": True, "layers": []}

    monkeypatch.setattr(network_cache, "check_network_isolated", fake_check)
    app = create_app(settings, pools=Pools(2, 1, []), run_scheduler=False)
    with TestClient(app) as client:
        response = client.post("/api/networks/inspect", json={"network": "lenet"})
    assert response.status_code == 200, response.text
    [(thread, timeout)] = seen
    assert thread.startswith("trainyard-inspect") and timeout == 123


def test_more_slow_checks_than_the_queue_are_told_when_to_retry(settings, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(network_cache, "check_network_isolated", lambda *a, **k: release.wait(20) and {"ok": True})
    monkeypatch.setattr(network_cache, "checks", CheckGate(workers=1, queue=1))
    app = create_app(settings, pools=Pools(2, 1, []), run_scheduler=False)
    with TestClient(app) as client, ThreadPoolExecutor(4) as pool:
        # Geometries no other test asks for: the answers must not come from the check cache,
        # nor be one check (the same one asked for at once runs once).
        calls = [pool.submit(client.post, "/api/networks/inspect", json={"network": "lenet", "num_classes": n})
                 for n in (71, 72, 73, 74)]
        time.sleep(1.0)
        cached = client.post("/api/networks/inspect", json={"source": "x = 1\n", "image_size": 32})
        release.set()
        responses = sorted((c.result() for c in calls), key=lambda r: r.status_code)
    assert [r.status_code for r in responses] == [200, 200, 429, 429]
    for refused in responses[2:]:
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["detail"].startswith("the server is busy checking 2 other networks; try again in")
    # What needs no checker answers while the checker is full.
    assert cached.status_code == 200 and "must define a function build" in cached.json()["error"]
