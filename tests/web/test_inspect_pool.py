"""Network checks run in a bounded pool of their own with a timeout, never in asyncio's default
pool (where eight slow checks held a new job queued for 52 s)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from trainyard.jobs.resources import Pools
from trainyard.networks import cache as network_cache
from trainyard.networks.isolated import check_timeout
from trainyard.web.app import create_app
from trainyard.web.routers import networks


def test_checks_run_in_their_own_pool_with_a_timeout(settings, monkeypatch):
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
    assert thread.startswith("trainyard-inspect") and timeout == check_timeout()  # TRAINYARD_CHECK_TIMEOUT_S


def test_more_slow_checks_than_the_bound_are_told_to_retry(settings, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(network_cache, "check_network_isolated", lambda *a, **k: release.wait(20) and {"ok": True})
    monkeypatch.setattr(networks, "checks", networks.BoundedPool("trainyard-inspect-test", workers=1, queue=1))
    app = create_app(settings, pools=Pools(2, 1, []), run_scheduler=False)
    with TestClient(app) as client, ThreadPoolExecutor(4) as pool:
        # A geometry no other test asks for: the answer must not come from the check cache.
        calls = [pool.submit(client.post, "/api/networks/inspect", json={"network": "lenet", "num_classes": 7})
                 for _ in range(4)]
        time.sleep(1.0)
        release.set()
        statuses = sorted(c.result().status_code for c in calls)
    assert statuses == [200, 200, 429, 429]
