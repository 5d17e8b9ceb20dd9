"""The bounded queue in front of the network checker: a check answers within one check's time,
or is told at once when to come back (HTTP 429 with Retry-After).

At most ``workers`` checks run at once (what the checker runs side by side) and at most
``queue`` wait. With no more waiting than running, each waiting check gets the slot of one that
is already running, so it waits at most one check's time; the next one is refused with the
time a slot is likely to free, instead of waiting behind everyone (12 concurrent checks once
left 6 waiting after 153 s). Identical checks asked for at the same time (Visualize, then
Create) run once: later askers wait for the first one's answer and take no slot.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future

from trainyard.core.errors import UserError

CHECK_WORKERS = 2  # checks side by side: each builds a network on the CPU, and 2 cores are common
TYPICAL_CHECK_S = 10.0  # what Retry-After assumes before any check here has finished


class ChecksBusy(UserError):
    """More checks than the checker's queue holds; ``retry_after`` seconds (HTTP 429)."""

    http_status = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class CheckGate:
    def __init__(self, workers: int = CHECK_WORKERS, queue: int | None = None):
        self.workers = workers
        self.queue = workers if queue is None else queue
        self._lock = threading.Condition()
        self._running: dict[int, float] = {}  # ticket -> start (monotonic)
        self._waiting = 0
        self._tickets = 0
        self._flights: dict[str, Future] = {}  # key -> the answer of the check under way
        self._durations: deque[float] = deque(maxlen=20)

    def run(self, key: str, check: Callable[[], dict]) -> dict:
        """``check()``'s answer, run when a slot is free; ChecksBusy when too many are waiting."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is None:
                if len(self._running) >= self.workers and self._waiting >= self.queue:
                    raise self._busy()
                flight = self._flights[key] = Future()
                owner = True
            else:
                owner = False
        if not owner:
            return flight.result()  # the same check, already asked for: its answer, no slot
        try:
            ticket = self._enter()
            try:
                answer = check()
            finally:
                self._leave(ticket)
            flight.set_result(answer)
            return answer
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._flights.pop(key, None)

    def _enter(self) -> int:
        with self._lock:
            self._waiting += 1
            while len(self._running) >= self.workers:
                self._lock.wait()
            self._waiting -= 1
            self._tickets += 1
            self._running[self._tickets] = time.monotonic()
            return self._tickets

    def _leave(self, ticket: int) -> None:
        with self._lock:
            self._durations.append(time.monotonic() - self._running.pop(ticket))
            self._lock.notify()

    def _busy(self) -> ChecksBusy:
        """The refusal, with when the first running check is likely to end (caller holds the lock)."""
        typical = statistics.median(self._durations) if self._durations else TYPICAL_CHECK_S
        now = time.monotonic()
        soonest = min(typical - (now - start) for start in self._running.values())
        # Behind the waiting ones too: each takes a slot before a newcomer would.
        wait = max(1, math.ceil(soonest + typical * self._waiting / self.workers))
        return ChecksBusy(f"the server is busy checking {len(self._running) + self._waiting} other networks; "
                          f"try again in {wait} s", wait)
