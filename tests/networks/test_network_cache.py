"""The cache of network checks and parameter counts: asked once, kept on disk, never a failure
that may pass next time."""

from __future__ import annotations

import pytest

from trainyard.networks import cache as network_cache_module
from trainyard.networks.cache import NetworkCache


@pytest.fixture
def calls(monkeypatch):
    """Checks answered without a child process; the list records each one asked for."""
    asked = []

    def fake_check(source, num_classes, in_channels, image_size, timeout, *, network, input_size,
                   task="classification"):
        asked.append(network or source if task == "classification" else (task, network or source))
        if network == "slow":
            return {"ok": False, "error": "the check took longer than 60 s", "line": None, "transient": True}
        return {"ok": True, "params": num_classes}

    monkeypatch.setattr(network_cache_module, "check_network_isolated", fake_check)
    monkeypatch.setattr(network_cache_module, "_memory", network_cache_module.OrderedDict())
    return asked


def test_a_check_is_made_once_and_kept_across_restarts(tmp_path, calls):
    first = NetworkCache(tmp_path)
    for _ in range(3):
        assert first.check(network="lenet", num_classes=3, in_channels=1, image_size=28) == {"ok": True, "params": 3}
    assert first.check(network="lenet", num_classes=4, in_channels=1, image_size=28)["params"] == 4
    assert calls == ["lenet", "lenet"]  # once per distinct request
    network_cache_module._memory.clear()  # a new server process: only the files remain
    assert NetworkCache(tmp_path).check(network="lenet", num_classes=3, in_channels=1, image_size=28)["ok"]
    assert calls == ["lenet", "lenet"]


def test_a_custom_source_is_kept_in_memory_only(tmp_path, calls):
    cache = NetworkCache(tmp_path)
    source = "def build(num_classes, in_channels, image_size):\n    pass\n"
    for _ in range(2):
        assert cache.check(source=source, num_classes=3, in_channels=3, image_size=32)["ok"]
    assert calls == [source] and list(tmp_path.glob("*.json")) == []


def test_a_detection_check_is_not_a_classification_checks_answer(tmp_path, calls):
    """The same file checked for a detection dataset is checked as a detector, and kept apart."""
    cache = NetworkCache(tmp_path)
    source = "def build(num_classes, in_channels, image_size):\n    pass\n"
    for task in ("classification", "detection", "detection"):
        assert cache.check(source=source, num_classes=3, in_channels=3, image_size=32, task=task)["ok"]
    assert calls == [source, ("detection", source)]


def test_a_check_that_timed_out_is_asked_again(tmp_path, calls):
    cache = NetworkCache(tmp_path)
    for _ in range(2):
        assert cache.check(network="slow", num_classes=3, in_channels=3, image_size=32)["transient"]
    assert calls == ["slow", "slow"]


def test_parameter_counts_follow_classes_and_channels(tmp_path, calls):
    cache = NetworkCache(tmp_path)
    assert cache.parameter_count("lenet", 10, 3) == 432_080
    assert cache.parameter_count("lenet", 2, 1) == 427_072  # what Visualize says for 1x28x28, 2 classes
    network_cache_module._memory.clear()
    assert NetworkCache(tmp_path).parameter_count("lenet", 2, 1) == 427_072
    assert len(list(tmp_path.glob("*.json"))) == 2
