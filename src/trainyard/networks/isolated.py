"""Checking a network in a child process: user code never runs in the server or CLI process.

Torch-free: the child (``python -m trainyard.networks.check``) imports torch and builds the
network, so a caller holding only cached answers (networks/cache.py) never loads it.
"""

from __future__ import annotations

import json
import subprocess
import sys

from trainyard.core.environment import child_environment, kill_group


def check_network_isolated(
    source: str | None, num_classes: int, in_channels: int, image_size: int | None,
    timeout: float = 60, *, network: str | None = None, filename: str = "network.py",
    input_size: tuple[int, int] | None = None,
) -> dict:
    """Check and inspect a custom `source` (or the standard `network`) in a child process.

    Returns {"ok": True, "layers": [...], "params": N, ...} (see inspect_network) or
    {"ok": False, "error": message, "line": n or None}, plus "transient": True when the check
    itself timed out or crashed (worth trying again), and "timed_out": True when it timed out.
    Never raises for problems in the network.
    """
    if (source is None) == (network is None):
        raise ValueError("give exactly one of source or network")
    request = {"source": source, "network": network, "filename": filename, "input_size": input_size,
               "num_classes": num_classes, "in_channels": in_channels, "image_size": image_size}
    # Hide GPUs: a check must not take memory from trainings; start_new_session lets us kill
    # everything the user's code may have started.
    env = child_environment(CUDA_VISIBLE_DEVICES="")  # nor the server's secrets
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainyard.networks.check"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, start_new_session=True, text=True,
    )
    try:
        stdout, stderr = proc.communicate(json.dumps(request), timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        # Not "does not build": a slow check says nothing about the network (it may train fine).
        return {"ok": False, "error": f"the check took longer than {timeout:g} s, so it says nothing "
                "about the network (the limit is TRAINYARD_CHECK_TIMEOUT_S)", "line": None, "transient": True,
                "timed_out": True}
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = stderr.strip()[-500:]
        error = f"network check crashed (exit code {proc.returncode})" + (f": {tail}" if tail else "")
        return {"ok": False, "error": error, "line": None, "transient": True}
