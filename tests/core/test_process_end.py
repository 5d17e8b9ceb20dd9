"""The one wording of how a process ended, shared by local jobs, cluster ranks and child processes."""

from __future__ import annotations

import signal
import subprocess
import sys

from trainyard.core.formatting import process_end


def test_a_killed_process_is_named_by_its_signal_and_an_exit_by_its_code():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child.send_signal(signal.SIGKILL)
    assert process_end(child.wait()) == "killed by SIGKILL"
    assert process_end(subprocess.call([sys.executable, "-c", "raise SystemExit(3)"])) == "exit code 3"
    assert process_end(-200) == "killed by signal 200"  # no such signal name
    assert process_end(None) == "exit code unknown"
