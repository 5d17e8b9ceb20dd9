"""A sandboxed child spawned from a passing thread outlives the thread.

bwrap's --die-with-parent is tied to the thread that starts it. A model worker spawned (not
forked from the warm checker: it reads its model's folder) from a request's worker thread, which
anyio ends after ten idle seconds, was killed with that thread, and the next request paid its
start again. Children are started from one thread that lasts as long as the process.
"""

from __future__ import annotations

import subprocess
import threading

import pytest

from trainyard.sandbox import namespaces
from trainyard.sandbox.childproc import Child, default_policy


@pytest.mark.skipif(not namespaces.available(), reason="needs bubblewrap namespaces")
def test_a_child_spawned_from_a_passing_thread_outlives_the_thread_and_answers(tmp_path):
    policy = default_policy()
    policy.read = [str(tmp_path)]  # a folder to read: spawned in namespaces of its own, not forked
    made: list[Child] = []
    starting = threading.Thread(target=lambda: made.append(
        Child("builtins:dict", policy, what="the echo", start_timeout=300, zygote=None, trusted=True)))
    starting.start()
    starting.join()
    child = made[0]
    try:
        assert child.proc is not None  # spawned, as a model worker is
        with pytest.raises(subprocess.TimeoutExpired):  # it was SIGKILLed as the thread ended
            child.proc.wait(timeout=10)
        assert child.ask({"hello": 1}, timeout=60) == {"hello": 1}
    finally:
        child.stop()
