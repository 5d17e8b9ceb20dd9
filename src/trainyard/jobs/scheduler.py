"""The server's scheduler: an asyncio task that ticks the job manager a few times a second."""

from __future__ import annotations

import asyncio
import logging

from trainyard.jobs.manager import JobManager

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, manager: JobManager, interval_s: float = 0.5):
        self.manager = manager
        self.interval_s = interval_s
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="trainyard-scheduler")

    def wake(self) -> None:
        """Tick now instead of at the next interval (a job was just queued or aborted)."""
        self._wake.set()

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.manager.tick)
            except Exception:  # a broken tick must not stop scheduling for good
                log.exception("scheduler tick failed")
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval_s)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
