"""Connecting to the Ray cluster named by Ray's own RAY_ADDRESS, or saying clearly that none is.

``ray.init()`` without an address starts a private local Ray, and with an address nobody
answers it retries for a long while: neither is acceptable for a server. So an address is
required, and a host:port address is probed with a plain TCP connect (two seconds) before Ray
is asked to join it.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from trainyard.core import environment
from trainyard.core.jobproc import one_line

NAMESPACE = "trainyard"  # named actors (one per rank) live here, so the server can find them
_lock = threading.Lock()
_joining: threading.Thread | None = None  # a join that has not answered yet (never two at once)


class ClusterUnavailable(RuntimeError):
    """TRAINYARD_CLUSTER=ray, but no Ray cluster answers at RAY_ADDRESS (the message says so)."""


def address() -> str:
    value = environment.ray_address()
    if not value:
        raise ClusterUnavailable("TRAINYARD_CLUSTER=ray but RAY_ADDRESS is not set: set it to the "
                                 "head node's HOST:PORT (ray start --head prints it)")
    return value


def probe(value: str, timeout_s: float = 2.0) -> None:
    """Raise ClusterUnavailable unless something listens at the address's host and port."""
    why = unreachable(value, timeout_s)
    if why:
        raise ClusterUnavailable(f"no Ray cluster reachable at RAY_ADDRESS={value} ({why}); start one with "
                                 "`ray start --head` or set TRAINYARD_CLUSTER=local")


def unreachable(value: str, timeout_s: float = 2.0) -> str | None:
    """Why nothing answers at the address's host and port ("Connection refused"), or None."""
    if value == "auto":
        return None  # Ray reads the address of the cluster started on this machine from /tmp/ray
    host, _, port = value.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ClusterUnavailable(f"RAY_ADDRESS {value!r} should be HOST:PORT, e.g. 10.0.0.1:6379")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def connect(timeout_s: float = 30.0) -> Any:
    """The ``ray`` module, connected to the cluster (once per process).

    Ray retries an address that answers TCP but is no Ray (or that it rewrites to one that does
    not answer) for many minutes; ``timeout_s`` bounds that wait.
    """
    global _joining
    import ray

    with _lock:
        if ray.is_initialized():
            return ray
        value = address()
        if _joining is not None and _joining.is_alive():
            raise ClusterUnavailable(f"still trying to join the Ray cluster at RAY_ADDRESS={value}")
        probe(value)
        failure: list[BaseException] = []
        _joining = joining = threading.Thread(target=_init, args=(ray, value, failure), daemon=True)
        joining.start()
        joining.join(timeout_s)
        if joining.is_alive():
            raise ClusterUnavailable(f"the Ray cluster at RAY_ADDRESS={value} did not answer within "
                                     f"{timeout_s:.0f} s; check that it runs and that this machine can reach it")
        if failure:
            raise ClusterUnavailable(f"could not join the Ray cluster at RAY_ADDRESS={value}: "
                                     f"{one_line(failure[0])}")
        return ray


class _NoSigtermNote(logging.Filter):
    """Ray warns that it set no SIGTERM handler when joined from a thread other than the main
    one, as `connect` does (to bound the join): the process's own handlers stay, as meant."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _init(ray: Any, value: str, failure: list[BaseException]) -> None:
    logging.getLogger("ray._private.worker").addFilter(_NoSigtermNote())
    try:
        ray.init(address=value, namespace=NAMESPACE, log_to_driver=False, logging_level="WARNING",
                 configure_logging=False)
    except Exception as exc:  # ConnectionError, or Ray's own kinds of it
        failure.append(exc)
