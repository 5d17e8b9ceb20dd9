"""A one-worker cluster job locks its network before any user code, as a job of several does:
distributed setup returned before the lock on that path, and the job's code reached its node's
Ray services (issue 42)."""

from __future__ import annotations

import socket

from trainyard.sandbox.rank_network import LOCK_FD_VARIABLE
from trainyard.training import distributed


def test_a_one_worker_job_asks_its_supervisor_to_lock_before_returning(monkeypatch):
    supervisor, rank = socket.socketpair()
    with supervisor:
        supervisor.sendall(b"locked\n")  # the supervisor's answer, waiting for the rank's question
        monkeypatch.delenv("RANK", raising=False)
        monkeypatch.delenv("WORLD_SIZE", raising=False)
        monkeypatch.setenv(LOCK_FD_VARIABLE, str(rank.detach()))
        assert distributed.setup() is distributed.SINGLE
        supervisor.settimeout(5)
        assert supervisor.recv(64) == b"lock\n"


def test_a_job_without_a_supervisor_has_nothing_to_lock(monkeypatch):
    monkeypatch.delenv(LOCK_FD_VARIABLE, raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert distributed.setup() is distributed.SINGLE
