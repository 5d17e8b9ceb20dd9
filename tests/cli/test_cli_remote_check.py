"""`train --submit` checks its network with a running server's warm checker, and says so when it
has to start a checker of its own (a torch start) instead of sitting silent (issue 31, point 3)."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.live_server import free_port, serving
from trainyard.cli.remote_check import ask_server
from trainyard.jobs.scheduling.resources import Pools
from trainyard.networks import cache as network_cache

REQUEST = {"what": "check", "network": "lenet", "source": None, "num_classes": 3, "in_channels": 3,
           "image_size": 28, "input_size": [28, 30]}


def test_a_running_server_answers_the_check(settings, monkeypatch):
    from trainyard.web.app import create_app

    asked: list[tuple] = []

    def server_checker(source, num_classes, in_channels, image_size, timeout=None, **kw):
        asked.append((kw["network"], num_classes, in_channels, kw["input_size"]))
        return {"ok": True, "layers": [], "params": 7}  # 7 parameters: no real check says so

    # The server runs in this process here, so the fake stands for the server's warm checker.
    monkeypatch.setattr(network_cache, "check_network_isolated", server_checker)
    said: list[str] = []
    # As `serve` does, the app writes its token for the CLI (core/server_token.py), which the check sends.
    app = create_app(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), publish_token=True)
    with serving(app) as url:
        port = urlparse(url).port
        answer = ask_server(settings.model_copy(update={"port": port}), said.append, REQUEST)
    assert answer is not None and answer["params"] == 7  # the server's answer
    assert asked == [("lenet", 3, 3, (28, 30))]
    assert said == []


def test_without_a_server_it_says_a_checker_starts(settings):
    said: list[str] = []
    assert ask_server(settings.model_copy(update={"port": free_port()}), said.append, REQUEST) is None
    assert said and said[0].startswith("checking that network lenet runs on 3x28x30 input: starting a network checker")


def test_the_cache_asks_first_before_starting_a_checker(tmp_path, monkeypatch):
    def no_local_checker(*args, **kwargs):
        pytest.fail("a check answered by the server must not start a checker here")

    monkeypatch.setattr(network_cache, "check_network_isolated", no_local_checker)
    monkeypatch.setattr(network_cache, "ask_first",
                        lambda request: {"ok": True, "layers": [], "n": request["num_classes"]})
    answer = network_cache.NetworkCache(tmp_path).check(network="lenet", num_classes=17, in_channels=1, image_size=32)
    assert answer == {"ok": True, "layers": [], "n": 17}
