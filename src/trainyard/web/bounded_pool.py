"""A small thread pool for slow request work, with a queue bound: past it a request is told to
come back later (429) instead of waiting behind everyone else or starving other work."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from trainyard.core.errors import UserError


class Busy(UserError):
    """Too many requests of this kind at once; retry in a moment (HTTP 429)."""

    http_status = 429
    retry_after = 2  # seconds (the Retry-After header): the work here is short once it runs


class BoundedPool:
    def __init__(self, name: str, workers: int, queue: int):
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._slots = threading.BoundedSemaphore(workers + queue)
        self.name = name

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._slots.acquire(blocking=False):
            raise Busy("the server is busy with other checks of this kind; try again in a few seconds")
        # The slot frees when the work ends, not when the request does: a client that hangs up
        # must not let more checks run than the bound.
        future = self._executor.submit(fn, *args, **kwargs)
        future.add_done_callback(lambda _: self._slots.release())
        return await asyncio.wrap_future(future)
