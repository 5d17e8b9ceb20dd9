"""The parts of a cluster rank's network hold that need no cluster (sandbox/rank_network.py): the
uid a job's ranks share, the rules before and after the lock, what the server reports, and the
lock asked for over the supervisor's socket. The whole is tested on namespace hosts
(tests/cluster/test_netns_rank_network.py)."""

from __future__ import annotations

import os
import threading
import time

from trainyard.sandbox import policy as sandbox
from trainyard.sandbox import rank_network
from trainyard.sandbox.policy import Policy


def test_a_jobs_ranks_share_one_uid_of_the_reserved_range():
    uid = rank_network.job_uid("20261202-011631-f132")
    assert uid == rank_network.job_uid("20261202-011631-f132")  # every node computes the same
    assert rank_network.DEFAULT_UID_BASE <= uid < rank_network.DEFAULT_UID_BASE + rank_network.UID_SPAN
    assert uid != rank_network.job_uid("20261202-011631-f133")


def test_the_rules_let_only_the_peers_be_reached_and_after_the_lock_nothing_new():
    rules = rank_network.RankFilter(1234, ["10.0.0.2", "10.0.0.3", "fd00::2"])
    before, after = rules._rules(locked=False), rules._rules(locked=True)
    assert "meta skgid != 1234 accept" in before and "ip daddr { 10.0.0.2, 10.0.0.3 }" in before
    assert "ip6 daddr { fd00::2 }" in before
    assert "daddr" not in after and "ct state established,related accept" in after
    assert before.rstrip().endswith("drop") and after.rstrip().endswith("drop")


def test_the_server_says_whether_ranks_are_held_and_why_not(monkeypatch):
    state = sandbox.status()["rank_network"]
    assert state["held"] == (rank_network.unavailable_reason() is None and sandbox.status()["namespaces"])
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    state = sandbox.status()["rank_network"]
    assert not state["held"] and "not root" in state["reason"]


def test_a_rank_asks_for_the_lock_and_waits_until_it_is_done(monkeypatch):
    locked = []
    monkeypatch.setattr(rank_network.RankFilter, "install", lambda self: None)
    monkeypatch.setattr(rank_network.RankFilter, "lock", lambda self: locked.append(self.gid))
    monkeypatch.setattr(rank_network.RankFilter, "remove", lambda self: None)
    guard = rank_network.Guard(4321, ["10.0.0.2"])
    rank = threading.Thread(target=rank_network.lock_network)  # reads the fd from the environment
    rank.start()
    try:
        while rank.is_alive() and not locked:
            guard.check()
            time.sleep(0.01)
        rank.join(30)
        guard._theirs.detach()  # the rank's end, closed by the rank (here: this process's thread)
        assert locked == [4321] and not rank.is_alive()
        assert rank_network.LOCK_FD_VARIABLE not in os.environ
    finally:
        guard.close()


def test_two_ranks_of_one_job_on_one_node_are_held_and_locked_apart(monkeypatch):
    """One uid (the job's, for its shared folder), two groups: each rank's table is its own, so one
    rank's lock never cuts the other's rendezvous, nor does one's end lift the other's hold."""
    monkeypatch.setattr(rank_network, "unavailable_reason", lambda: None)
    for name in ("install", "lock", "remove"):
        monkeypatch.setattr(rank_network.RankFilter, name, lambda self: None)
    uid = rank_network.job_uid("20261202-011631-f132")
    guards = [rank_network.Guard.start(Policy(uid=uid, peers=["10.0.0.2"]), supervisor) for supervisor in (4001, 4002)]
    try:
        assert all(g is not None for g in guards)
        tables = {g.filter.table for g in guards if g is not None}
        assert len(tables) == 2
        assert all(rank_network.job_uid("x") != g.filter.gid for g in guards if g is not None)
    finally:
        for guard in guards:
            if guard is not None:
                guard.close()
    assert rank_network.LOCK_FD_VARIABLE not in os.environ  # nothing left for later children to inherit
