"""Watches the work stream's backlog and Redis's health, off the request path.

Every poll reads XINFO GROUPS once; SubmitPredictions then checks a number in memory. The backlog
of a family is its lag (undelivered) plus pending (unacknowledged); the gateway refuses new work
when any deployed family's backlog is at its cap, and tells clients when to retry from the rate
at which the backlog drains.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import redis
import redis.asyncio as aioredis

from gateway.deployment import Deployment, group_name
from gateway.poller import Poller
from holistic.errors import Backpressure, Unavailable
from holistic.process.observability import BACKLOG, BACKLOG_CAP, DEAD_LETTERS, LAG, PENDING, REDIS_UP
from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys

log = logging.getLogger("holistic.gateway")

MIN_RETRY_S = 0.5
MAX_RETRY_S = 30.0


class BacklogMonitor:
    def __init__(
        self,
        r: aioredis.Redis,
        keys: Keys,
        deployment: Deployment,
        cap: int,
        shards: int = 1,
        interval_s: float = 0.25,
        on_health: Callable[[bool], Awaitable[None]] | None = None,
    ) -> None:
        self.r = r
        self.keys = keys
        self.deployment = deployment
        self.cap = cap
        BACKLOG_CAP.set(cap)
        self.shards = shards
        self.interval_s = interval_s
        self.on_health = on_health
        self.backlog = 0
        self.per_family: dict[str, int] = {}  # batches not yet applied per family, as last polled
        self.healthy: bool | None = None
        self.drain_per_s = 0.0
        self._last: tuple[float, int] | None = None
        self._poller = Poller("backlog-monitor", self.poll, interval_s)

    async def poll(self) -> None:
        """One look at every shard: per deployed family (consumer group), lag + pending summed over shards."""
        per_family: dict[str, list[int]] = {}
        by_shard: dict[int, list[str]] = {}
        dead = 0
        try:
            for shard in range(self.shards):
                stream = self.keys.stream_for(shard)
                try:
                    groups = await self.r.xinfo_groups(stream)
                except redis.ResponseError as exc:  # no stream yet: nothing queued there
                    if "no such key" not in str(exc).lower():
                        raise
                    by_shard[shard] = []
                    continue
                length = await self.r.xlen(stream) if groups else 0
                dead += await self.r.xlen(self.keys.dead_letters_for(shard))
                by_shard[shard] = [group_name(g) for g in groups]
                for g in groups:
                    counts = per_family.setdefault(group_name(g), [0, 0])
                    counts[0] += int(g["lag"]) if g.get("lag") is not None else length
                    counts[1] += int(g.get("pending", 0))
            await self.deployment.observe(by_shard)
        except RETRYABLE as exc:
            await self._set_health(False, exc)
            return
        self.per_family = {family: lag + pending for family, (lag, pending) in per_family.items()}
        worst = 0
        for family, (lag, pending) in per_family.items():
            LAG.labels(family).set(lag)
            PENDING.labels(family).set(pending)
            BACKLOG.labels(family).set(lag + pending)
            worst = max(worst, lag + pending)
        DEAD_LETTERS.set(dead)
        now = time.monotonic()
        if self._last is not None and now > self._last[0]:
            drained = self._last[1] - worst
            rate = max(drained, 0) / (now - self._last[0])
            self.drain_per_s = 0.8 * self.drain_per_s + 0.2 * rate if self.drain_per_s else rate
        self._last = (now, worst)
        self.backlog = worst
        await self._set_health(True, None)

    async def _set_health(self, ok: bool, exc: BaseException | None) -> None:
        REDIS_UP.set(1 if ok else 0)
        if ok != self.healthy:
            if ok:
                log.info("redis reachable: serving")
            else:
                log.error("redis unreachable (%s): NOT_SERVING", exc)
            self.healthy = ok
            if self.on_health is not None:
                await self.on_health(ok)

    def check(self) -> None:
        """Raise Unavailable or Backpressure instead of accepting a new batch."""
        if self.healthy is False:
            raise Unavailable("redis is unreachable")
        if self.backlog >= self.cap:
            excess = self.backlog - int(self.cap * 0.8)
            retry = excess / self.drain_per_s if self.drain_per_s > 0 else 2.0
            raise Backpressure.backlog(min(max(retry, MIN_RETRY_S), MAX_RETRY_S), self.backlog, self.cap)

    async def start(self) -> None:
        await self.poll()
        self._poller.start()

    async def stop(self) -> None:
        await self._poller.stop()
