"""A rank's Ray worker that leaves the launcher's poll unanswered is lost at once where its node
does not answer either (cut off), and waited for where the node answers (a slow worker)."""

from __future__ import annotations

import socket
from types import SimpleNamespace

from trainyard.cluster.liveness import ALIVE_ANSWER_S, ANSWER_S, Liveness


def test_a_silent_worker_is_lost_after_ten_seconds_only_where_its_node_is_silent_too(capsys):
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused, as a node gone from the network
        liveness = Liveness({"up": f"127.0.0.1:{listening.getsockname()[1]}",
                             "down": f"127.0.0.1:{closed.getsockname()[1]}"}, ["node a", "node b", "node c"])
        assert not liveness.lost(1, "down", ANSWER_S - 1)
        assert liveness.lost(1, "down", ANSWER_S + 1)
        assert liveness.lost(2, "unknown", ANSWER_S + 1)  # no raylet address known: silence decides
        assert not liveness.lost(0, "up", ANSWER_S + 1) and not liveness.lost(0, "up", ALIVE_ANSWER_S - 1)
        assert liveness.lost(0, "up", ALIVE_ANSWER_S + 1)  # answering node, worker hung this long: lost
    said = capsys.readouterr().err.splitlines()
    assert said == [f"rank 0's Ray worker on node a has not answered for {ANSWER_S + 1:.0f} s, but its node "
                    f"answers: waiting up to {ALIVE_ANSWER_S:.0f} s for it"]  # once


def test_a_node_that_answered_is_not_asked_again_for_a_few_seconds(monkeypatch):
    """The launcher polls every half second: a silent worker's node is probed every REPROBE_S, not each poll."""
    from trainyard.cluster import liveness as module

    probes = []
    answering = [True]
    monkeypatch.setattr(module, "unreachable", lambda address, timeout_s: probes.append(address) or not answering[0])
    clock = [1000.0]
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    watch = Liveness({"up": "10.0.0.1:1"}, ["node a"])
    for _ in range(5):  # two and a half seconds of polls
        assert not watch.lost(0, "up", ANSWER_S + 1)
        clock[0] += 0.5
    assert probes == ["10.0.0.1:1"]
    answering[0] = False  # cut off now: taken for lost once the answer is REPROBE_S old
    clock[0] += module.REPROBE_S
    assert watch.lost(0, "up", ANSWER_S + 8)
    assert len(probes) == 2
