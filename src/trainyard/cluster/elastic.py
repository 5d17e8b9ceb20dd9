"""Sizes of an elastic cluster job (``min_workers``): on how many workers the next attempt runs.

A job of ``N`` workers runs on a divisor of ``N`` (at least ``min_workers``), so that each rank
accumulates a whole number of batches per step and the global batch stays the same
(training/elastic.py). After a lost node the launcher places the largest size the free CPUs or
GPUs hold; while it runs smaller than ``N``, it watches for nodes to return and, when a larger
size fits beside it, asks the ranks (through the fence) to stop at the next epoch boundary from
a checkpoint, and places the job again at that size. Ray Train and Determined restart a job at
the size it had; this is what they do not do.
"""

from __future__ import annotations

import time
from typing import Any

SETTLE_S = 2.0  # Ray's free resources lag a removed placement group by about a second
GROW_CHECK_S = 5.0


def sizes(full: int, minimum: int) -> list[int]:
    """The sizes a job of ``full`` workers may run at, largest first."""
    return [n for n in range(full, 0, -1) if full % n == 0 and n >= minimum]


def fitting(full: int, minimum: int, free: float) -> int:
    """The largest size that ``free`` workers' resources hold; ``minimum``'s size if none does
    (the placement then waits for it, saying what is missing)."""
    allowed = sizes(full, minimum)
    return next((n for n in allowed if n <= free), allowed[-1])


def free_workers(ray: Any, resource: str, lost: frozenset[str] = frozenset()) -> float:
    """How many one-``resource`` workers the cluster could place now, after Ray settles."""
    time.sleep(SETTLE_S)
    return free_now(ray, resource, lost)


def free_now(ray: Any, resource: str, lost: frozenset[str]) -> float:
    """The free ``resource``, less what the nodes in ``lost`` (where a worker of this job went
    away) still hold by Ray's count: Ray counts a killed or cut-off node alive, with its CPUs
    free, until its health checks fail (15 s to a minute), and a node that returns comes back
    under a new id."""
    free = float(ray.available_resources().get(resource, 0))
    if lost:
        free -= sum(float(node.get("Resources", {}).get(resource, 0)) for node in ray.nodes()
                    if node.get("Alive") and node.get("NodeID") in lost)
    return max(0.0, free)


class GrowWatch:
    """While an attempt runs at ``current`` < ``full`` workers: the larger size that now fits
    beside it (checked every GROW_CHECK_S), once."""

    def __init__(self, ray: Any, resource: str, full: int, minimum: int, current: int,
                 lost: frozenset[str] = frozenset()):
        self.ray, self.resource, self.full, self.minimum, self.current = ray, resource, full, minimum, current
        self.lost = lost  # nodes where a worker of the job went away: never counted as returned
        self._checked = time.monotonic()
        self.asked: int | None = None

    def larger(self) -> int | None:
        if self.asked is not None or self.current >= self.full or time.monotonic() - self._checked < GROW_CHECK_S:
            return None
        self._checked = time.monotonic()
        size = fitting(self.full, self.minimum, self.current + free_now(self.ray, self.resource, self.lost))
        if size > self.current:
            self.asked = size
            return size
        return None
