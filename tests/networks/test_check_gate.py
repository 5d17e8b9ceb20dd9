"""The checker's queue: a check waits at most for one that is already running, the next is
told when to come back, and the same check asked for twice at once runs once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import wait_for
from trainyard.networks.check_gate import CheckGate, ChecksBusy


def test_past_the_queue_a_check_is_refused_with_a_retry_time():
    gate, release = CheckGate(workers=1, queue=1), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(gate.run, "a", lambda: release.wait(30) and {"ok": "a"})
        wait_for(lambda: gate._running)
        waiting = pool.submit(gate.run, "b", lambda: {"ok": "b"})
        wait_for(lambda: gate._waiting)
        with pytest.raises(ChecksBusy) as busy:
            gate.run("c", lambda: {"ok": "c"})
        assert busy.value.http_status == 429 and busy.value.retry_after >= 1
        assert f"try again in {busy.value.retry_after} s" in str(busy.value)
        release.set()
        assert running.result(30) == {"ok": "a"} and waiting.result(30) == {"ok": "b"}
    assert gate.run("c", lambda: {"ok": "c"}) == {"ok": "c"}  # room again


def test_the_same_check_asked_for_at_once_runs_once():
    gate, calls, release = CheckGate(workers=1, queue=0), [], threading.Event()

    def check():
        calls.append(1)
        release.wait(30)
        return {"ok": True}

    with ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(gate.run, "same", check) for _ in range(4)]
        wait_for(lambda: calls)
        time.sleep(0.2)  # the others have joined the first (a queue of 0 would refuse new ones)
        release.set()
        assert [a.result(30) for a in answers] == [{"ok": True}] * 4
    assert calls == [1]


def test_a_check_that_raises_frees_its_slot():
    gate = CheckGate(workers=1, queue=0)
    with pytest.raises(RuntimeError):
        gate.run("a", lambda: (_ for _ in ()).throw(RuntimeError("checker died")))
    assert gate.run("a", lambda: {"ok": True}) == {"ok": True}
