"""WatchProfile fan-out: one blocking XREAD loop for every watched model, on a connection of its own.

Workers XADD to a model's capped updates stream after every apply. The hub's single loop reads all
watched models' streams in one XREAD (per cluster slot on a Redis Cluster) on its own client, so
watches hold no connection of the pools that reads and submits use, however many are open. A
model's feed wakes its watchers; watchers of one model and window share each recomputed profile
(computed at most every `min_interval_s`: bursts of applies coalesce), so a thousand watchers cost
one read per update. Every watcher re-checks its token at least every CHECK_S, so a revoked or
expired token's streams end within a second. The loop reads the watched models' tombstones (one GET each,
one pipeline) at most every CHECK_S: a model deleted (DeleteModel, DeleteTenantData: its tombstone set
or renumbered) ends its watches with NOT_FOUND, "model ... was deleted", within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.crc import key_slot

from gateway.profiles import ProfileReader, WindowSpec
from gateway.read_limits import ReadLimits
from holistic.errors import NotFound, Unauthenticated
from holistic.redis.connection import RETRYABLE
from holistic.tenancy.tenants import DEFAULT_TENANT, internal_model
from holistic.v1.profile_pb2 import Profile

log = logging.getLogger("holistic.gateway")

CHECK_S = 0.25  # how often an idle watcher re-checks its token
BLOCK_MS = 250  # the feed loop's XREAD block: a newly watched model joins the read within it


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _Feed:
    """One watched model: the last updates-stream id seen, a version bumped per batch of news, and the
    latest profile per window, shared by its watchers."""

    def __init__(self, last_id: str, model: str, tombstone: bytes | None) -> None:
        self.last_id = last_id
        self.model = model
        self.tombstone = tombstone  # the model's tombstone when the feed began: another one is a deletion
        self.deleted = False
        self.version = 0
        self.changed = asyncio.Event()
        self.watchers = 0
        self.shared: dict[WindowSpec, tuple[int, asyncio.Task[Profile]]] = {}

    def bump(self) -> None:
        self.version += 1
        self.changed.set()
        self.changed = asyncio.Event()
        self.shared.clear()  # every window needs a new profile now; watchers keep the tasks they await

    def profile(self, spec: WindowSpec, version: int, read: Callable[[], Any]) -> asyncio.Task[Profile]:
        """The profile of `spec` as of `version` or later: computed once for every watcher asking."""
        if len(self.shared) > 2 * self.watchers:  # windows of watchers gone: keep the map as small as they are
            self.shared.clear()
        held = self.shared.get(spec)
        if held is None or held[0] < version or (held[1].done() and held[1].exception() is not None):
            held = (self.version, asyncio.ensure_future(read()))
            self.shared[spec] = held
        return held[1]


class WatchHub:
    def __init__(
        self,
        feed_r: aioredis.Redis,
        reader: ProfileReader,
        limits: ReadLimits,
        min_interval_s: float = 0.1,
    ) -> None:
        self.feed_r = feed_r  # the loop's own client: never the pools of reads or submits
        self.reader = reader
        self.keys = reader.keys
        self.limits = limits
        self.min_interval_s = min_interval_s
        self.block_ms = BLOCK_MS
        self.feeds: dict[str, _Feed] = {}  # updates stream key -> feed
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def _join(self, model: str) -> tuple[str, _Feed]:
        stream = self.keys.updates(model)
        feed = self.feeds.get(stream)
        if feed is None:
            # the newest entry now: everything after it is news, with no gap before the loop's next XREAD
            newest = await self.reader.r.xrevrange(stream, count=1)
            tombstone = await self.reader.r.get(self.keys.deleted(model))
            feed = self.feeds.get(stream)  # another watcher may have joined meanwhile
            if feed is None:
                feed = self.feeds[stream] = _Feed(_text(newest[0][0]) if newest else "0-0", model, tombstone)
        feed.watchers += 1
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._loop(), name="watch-feed")
        self.wake.set()
        return stream, feed

    def _leave(self, stream: str, feed: _Feed) -> None:
        feed.watchers -= 1
        if feed.watchers == 0 and self.feeds.get(stream) is feed:
            del self.feeds[stream]

    def _groups(self) -> list[dict[str, str]]:
        """The streams to read, in one XREAD on a single Redis, one per hash slot on a cluster."""
        streams = {key: feed.last_id for key, feed in self.feeds.items()}
        if isinstance(self.feed_r, aioredis.Redis):
            return [streams] if streams else []
        by_slot: dict[int, dict[str, str]] = defaultdict(dict)
        for key, last in streams.items():
            by_slot[key_slot(key.encode())][key] = last
        return list(by_slot.values())

    async def _check_deleted(self) -> None:
        """End the feeds of models deleted since they began: their watchers answer NOT_FOUND."""
        feeds = list(self.feeds.items())
        pipe = self.feed_r.pipeline(transaction=False)
        for _, feed in feeds:
            pipe.get(self.keys.deleted(feed.model))
        for (stream, feed), tombstone in zip(feeds, await pipe.execute(), strict=True):
            if tombstone is not None and tombstone != feed.tombstone:
                feed.deleted = True
                feed.bump()
                if self.feeds.get(stream) is feed:
                    del self.feeds[stream]

    async def _loop(self) -> None:
        delay = 0.1
        checked = 0.0
        while True:
            groups = self._groups()
            if not groups:
                self.wake.clear()
                await self.wake.wait()
                continue
            try:
                replies = await asyncio.gather(
                    *(self.feed_r.xread(g, block=self.block_ms, count=100) for g in groups)  # type: ignore[arg-type]
                )
                delay = 0.1
            except RETRYABLE as exc:
                log.warning("watch feed: redis unreachable (%s)", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            for reply in replies:
                for stream, entries in reply or ():
                    feed = self.feeds.get(_text(stream))
                    if feed is not None and entries:
                        feed.last_id = _text(entries[-1][0])
                        feed.bump()
            if self.feeds and time.monotonic() - checked >= CHECK_S:
                checked = time.monotonic()
                try:
                    await self._check_deleted()
                except RETRYABLE as exc:
                    log.warning("watch feed: redis unreachable (%s)", exc)

    async def watch(
        self,
        public: str,
        spec: WindowSpec,
        tenant: str = DEFAULT_TENANT,
        allowed: Callable[[], bool] = lambda: True,
    ) -> AsyncIterator[Profile]:
        """Profiles of the tenant's model: now, then after each apply, while `allowed()` holds."""
        model = internal_model(tenant, public)

        async def read() -> Profile:
            return await self.reader.profile(public, spec, tenant, queue=True)

        with self.limits.watch(tenant):
            stream, feed = await self._join(model)
            try:
                seen = feed.version
                yield await asyncio.shield(feed.profile(spec, seen, read))
                while True:
                    changed = feed.changed
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), CHECK_S)
                    if not allowed():
                        raise Unauthenticated("the token was revoked or has expired")
                    if feed.deleted:
                        raise NotFound(f"model {public!r} was deleted")
                    if feed.version == seen:
                        continue
                    await asyncio.sleep(self.min_interval_s)  # let a burst of applies land
                    seen = feed.version
                    yield await asyncio.shield(feed.profile(spec, seen, read))
            finally:
                self._leave(stream, feed)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.feeds.clear()
