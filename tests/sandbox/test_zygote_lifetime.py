"""A warm checker lives as long as the process that started it, not as long as the thread.

bwrap's --die-with-parent (PR_SET_PDEATHSIG) is tied to the thread that starts it: serve warms
its checker from a thread that ends once the checker is ready, and the checker was killed with
it, so a server's first check or import paid a torch start after all.
"""

from __future__ import annotations

import subprocess
import threading

import pytest

from trainyard.sandbox import namespaces
from trainyard.sandbox.zygote import Zygote


@pytest.mark.skipif(not namespaces.available(), reason="needs bubblewrap namespaces")
def test_a_checker_warmed_from_a_passing_thread_outlives_the_thread():
    zygote = Zygote(["json"], start_timeout=300)  # a light preload: only its lifetime is under test
    warming = threading.Thread(target=zygote.warm_up, name="warm-up")
    warming.start()
    warming.join()
    try:
        assert zygote.namespaced and zygote._proc is not None
        with pytest.raises(subprocess.TimeoutExpired):  # it was SIGKILLed as the thread ended
            zygote._proc.wait(timeout=10)
    finally:
        zygote._drop()  # its socket closed: it exits
