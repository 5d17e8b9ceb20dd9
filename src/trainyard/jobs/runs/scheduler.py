"""The server's scheduler: a thread of its own that ticks the job manager a few times a second.

It never runs in asyncio's default thread pool: request handlers (network checks, file reads)
fill that pool, and a tick queued behind eight slow checks once held a new job for 52 s.
"""

from __future__ import annotations

import logging
import threading

from trainyard.jobs.runs.manager import JobManager

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, manager: JobManager, interval_s: float = 0.5):
        self.manager = manager
        self.interval_s = interval_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="trainyard-scheduler", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Tick now instead of at the next interval (a job was just queued or aborted)."""
        self._wake.set()

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            # A tick takes milliseconds; a stuck one (a hung database) must not hold shutdown.
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.manager.tick()
            except Exception:  # a broken tick must not stop scheduling for good
                log.exception("scheduler tick failed")
            self._wake.wait(self.interval_s)
            self._wake.clear()
