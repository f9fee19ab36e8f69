"""WatchProfile fan-out: one blocking XREAD per watched model, shared by all its watchers.

Workers XADD to a model's capped updates stream after every apply. The model's feed wakes its
watchers; each recomputes its window's profile at most every `min_interval_s` (bursts of applies
coalesce into one profile), so a fresh profile goes out well within a second of an apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import redis.asyncio as aioredis

from gateway.profiles import ProfileReader, WindowSpec
from holistic.keys import Keys
from holistic.redis_conn import RETRYABLE
from holistic.tenants import DEFAULT_TENANT, internal_model
from holistic.v1.profile_pb2 import Profile

log = logging.getLogger("holistic.gateway")


class _Feed:
    def __init__(self, r: aioredis.Redis, stream: str) -> None:
        self.r = r
        self.stream = stream
        self.version = 0
        self.changed = asyncio.Condition()
        self.watchers = 0
        self.ready = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def _start_id(self) -> str:
        """The newest entry now: everything after it is news, with no gap before the first XREAD."""
        newest = await self.r.xrevrange(self.stream, count=1)
        if not newest:
            return "0-0"
        eid = newest[0][0]
        return eid.decode() if isinstance(eid, bytes) else eid

    async def run(self, block_ms: int) -> None:
        delay = 0.1
        while True:
            try:
                last = await self._start_id()
                break
            except RETRYABLE as exc:
                log.warning("watch feed %s: redis unreachable (%s)", self.stream, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        self.ready.set()
        while True:
            try:
                reply = await self.r.xread({self.stream: last}, block=block_ms, count=1000)
                delay = 0.1
            except RETRYABLE as exc:
                log.warning("watch feed %s: redis unreachable (%s)", self.stream, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            if not reply:
                continue
            entries = reply[0][1]
            last_id = entries[-1][0]
            last = last_id.decode() if isinstance(last_id, bytes) else last_id
            async with self.changed:
                self.version += 1
                self.changed.notify_all()


class WatchHub:
    def __init__(self, r: aioredis.Redis, reader: ProfileReader, min_interval_s: float = 0.1) -> None:
        self.r = r
        self.reader = reader
        self.keys = reader.keys
        self.min_interval_s = min_interval_s
        self.block_ms = 5000
        self.feeds: dict[str, _Feed] = {}

    def _feed(self, model: str) -> _Feed:
        feed = self.feeds.get(model)
        if feed is None:
            feed = self.feeds[model] = _Feed(self.r, Keys(self.keys.prefix).updates(model))
            feed.task = asyncio.create_task(feed.run(self.block_ms), name=f"watch-{model}")
        return feed

    async def watch(self, public: str, spec: WindowSpec, tenant: str = DEFAULT_TENANT) -> AsyncIterator[Profile]:
        model = internal_model(tenant, public)
        feed = self._feed(model)
        feed.watchers += 1
        try:
            await feed.ready.wait()
            seen = feed.version
            yield await self.reader.profile(public, spec, tenant)
            while True:
                async with feed.changed:
                    await feed.changed.wait_for(lambda seen=seen: feed.version != seen)
                await asyncio.sleep(self.min_interval_s)  # let a burst of applies land
                seen = feed.version
                yield await self.reader.profile(public, spec, tenant)
        finally:
            feed.watchers -= 1
            if feed.watchers == 0 and self.feeds.get(model) is feed:
                del self.feeds[model]
                if feed.task is not None:
                    feed.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await feed.task

    async def close(self) -> None:
        for feed in list(self.feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
        self.feeds.clear()
