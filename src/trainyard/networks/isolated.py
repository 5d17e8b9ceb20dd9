"""Checking a network in a sandboxed child process: user code never runs in the server or CLI process.

Torch-free: the child imports torch and builds the network, so a caller holding only cached
answers (networks/cache.py) never loads it. The child is forked from a warm checker
(sandbox/zygote.py: torch, torchvision and timm imported once), so after the first check a check
costs the build and the forward passes, about a second; it speaks sandbox/childproc.py's protocol
inside sandbox/policy.py's confinement (no token, no store, no writes, no processes, a memory
limit). A check that overruns its time (``TRAINYARD_CHECK_TIMEOUT_S``) says that it took longer,
never that the network does not build.
"""

from __future__ import annotations

from trainyard.core.vocabulary import DEFAULT_TASK, Task
from trainyard.networks.table import builder_modules
from trainyard.sandbox.childproc import Child, ChildFailed, default_policy, out_of_memory
from trainyard.sandbox.zygote import Zygote
from trainyard.settings import process_settings

# timm:vit_giant_patch14_224 (1.0 G parameters) took 388 s to build, run and inspect on a
# 2-core machine at load average 25; the default leaves room above it.
DEFAULT_TIMEOUT_S = 900.0
START_TIMEOUT_S = 180.0  # a cold start (no warm checker): Python and torch on a busy machine

# The builders' modules too: the registry imports a builder only when it is first used (table.py).
CHECKER = Zygote(["torch", "torchvision", "timm", "trainyard.networks.check", "trainyard.networks.custom",
                  "trainyard.networks.detection_check",
                  "trainyard.networks.layer_report", "trainyard.networks.registry",
                  "trainyard.networks.timm_networks", *builder_modules()])


def check_timeout() -> float:
    """The check's time limit in seconds (``TRAINYARD_CHECK_TIMEOUT_S``)."""
    try:
        return process_settings().check_timeout_s
    except ValueError:
        return DEFAULT_TIMEOUT_S


def handle(request: dict) -> dict:
    """The check, in the child (childproc's handler)."""
    from trainyard.sandbox.policy import memory_limit_mb

    from .check import run_check

    answer = run_check(request)
    if not answer.get("ok") and out_of_memory(str(answer.get("error", ""))):
        answer["error"] = (f"the network needs more than the {memory_limit_mb()} MiB of memory a check may use "
                           "(TRAINYARD_SANDBOX_MEMORY_MB)")
    return answer


def check_network_isolated(
    source: str | None, num_classes: int, in_channels: int, image_size: int | None,
    timeout: float | None = None, *, network: str | None = None, filename: str = "network.py",
    input_size: tuple[int, int] | None = None, task: Task = DEFAULT_TASK,
) -> dict:
    """Check and inspect a custom `source` (or the standard `network`) in a sandboxed child, as
    a classifier or, with ``task`` "detection", as a detector.

    Returns {"ok": True, "layers": [...], "params": N, ...} (see inspect_network) or
    {"ok": False, "error": message, "line": n or None}, plus "transient": True when the check
    itself timed out or crashed (worth trying again; "timed_out": True for the former). Never
    raises for problems in the network; SandboxUnavailable (503) when custom code cannot be
    confined here and TRAINYARD_ALLOW_UNSANDBOXED is not set.
    """
    if (source is None) == (network is None):
        raise ValueError("give exactly one of source or network")
    timeout = timeout or check_timeout()
    request = {"source": source, "network": network, "filename": filename, "input_size": input_size,
               "num_classes": num_classes, "in_channels": in_channels, "image_size": image_size, "task": task}
    try:
        child = Child("trainyard.networks.isolated:handle", default_policy(), what="the check",
                      start_timeout=START_TIMEOUT_S, zygote=CHECKER, trusted=source is None)
        try:
            answer = child.ask(request, timeout)
        finally:
            child.stop()
    except ChildFailed as exc:
        return {"ok": False, "error": str(exc), "line": None, "transient": True, "timed_out": exc.timed_out}
    if "ok" not in answer:  # childproc's own answer for a failure outside run_check
        return {"ok": False, "error": str(answer.get("error")), "line": None}
    return answer
