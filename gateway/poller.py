"""A coroutine run every few hundred milliseconds off the request path, until the gateway stops."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from holistic.redis.connection import RETRYABLE

log = logging.getLogger("holistic.gateway")


class Poller:
    def __init__(self, name: str, poll: Callable[[], Awaitable[None]], interval_s: float) -> None:
        self.name = name
        self.poll = poll
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self.stopping = False

    async def _run(self) -> None:
        while not self.stopping:  # a flag as well as cancel(): redis-py can swallow a CancelledError
            try:
                await self.poll()
            except RETRYABLE as exc:
                log.warning("%s: redis unreachable (%s)", self.name, exc)
            except Exception:
                log.exception("%s failed", self.name)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        self.stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
