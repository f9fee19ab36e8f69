"""Per-tenant and per-gateway bounds on reads: concurrent profile reads, their cost, and open watches.

Each read is charged the statistics buckets it folds (buckets per family x families) against the
tenant's budget (HOLISTIC_TENANT_READ_BUCKETS_PER_S): one tenant's reads then take a bounded share of
the gateway and of Redis, whatever windows it asks for; its watches refresh less often instead.

A tenant's reads beyond HOLISTIC_TENANT_CONCURRENT_READS wait their turn (a few per slot at most);
past that, and past the watch caps, the call is refused with RESOURCE_EXHAUSTED and RetryInfo, so
one tenant's reads can neither queue without bound nor take the gateway's slots from the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from holistic.errors import Backpressure
from holistic.process.observability import READS_REFUSED, WATCHES_OPEN

WAITING_PER_SLOT = 4  # reads a tenant may have queued per concurrent slot before it is refused
RETRY_AFTER_S = 0.5


MAX_BUDGET_WAIT_S = 2.0  # a read that would wait longer than this for the tenant's budget is refused


@dataclass
class _Budget:
    """A token bucket of bucket reads per second; it may go into debt by one read, which later reads
    of the tenant wait off, so a read costlier than a second's budget still runs."""

    rate: float
    tokens: float
    at: float

    def take(self, cost: float, now: float) -> float:
        """Charge cost; returns how long the caller must wait before reading."""
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        wait = max(0.0, -self.tokens / self.rate)
        self.tokens -= cost
        return wait

    def refund(self, cost: float) -> None:
        self.tokens += cost


@dataclass
class ReadLimits:
    concurrent_reads: int
    tenant_watches: int
    total_watches: int
    buckets_per_s: float = 0.0  # 0: no budget
    _budgets: dict[str, _Budget] = field(default_factory=dict)
    _slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _queued: Counter[str] = field(default_factory=Counter)
    _watches: Counter[str] = field(default_factory=Counter)

    @contextlib.asynccontextmanager
    async def read(self, tenant: str, queue: bool = False, cost: float = 0.0) -> AsyncIterator[None]:
        """Hold one of the tenant's read slots for the duration of a profile read, after charging its
        cost (statistics buckets it reads) to the tenant's budget. queue: wait for a slot and the
        budget however long (watches' reads: their number is capped by the watch caps)."""
        slot = self._slots.get(tenant)
        if slot is None:
            slot = self._slots[tenant] = asyncio.Semaphore(self.concurrent_reads)
        if not queue and self._queued[tenant] >= self.concurrent_reads * (1 + WAITING_PER_SLOT):
            READS_REFUSED.labels("tenant-concurrent-reads").inc()
            raise Backpressure(
                RETRY_AFTER_S,
                f"tenant:{tenant}:reads",
                f"{self._queued[tenant]} profile reads in flight or queued",
                f"tenant {tenant!r} has {self._queued[tenant]} profile reads in flight or queued; "
                f"at most {self.concurrent_reads} run at once (HOLISTIC_TENANT_CONCURRENT_READS); retry later",
            )
        self._queued[tenant] += 1
        try:
            async with slot:
                await self._charge(tenant, cost, queue)
                yield
        finally:
            self._queued[tenant] -= 1
            if not self._queued[tenant]:
                del self._queued[tenant]

    async def _charge(self, tenant: str, cost: float, queue: bool) -> None:
        if not self.buckets_per_s or not cost:
            return
        loop = asyncio.get_running_loop()
        budget = self._budgets.get(tenant)
        if budget is None:
            budget = self._budgets[tenant] = _Budget(self.buckets_per_s, self.buckets_per_s, loop.time())
        wait = budget.take(cost, loop.time())
        if wait > MAX_BUDGET_WAIT_S and not queue:
            budget.refund(cost)
            READS_REFUSED.labels("tenant-read-budget").inc()
            raise Backpressure(
                wait,
                f"tenant:{tenant}:read-budget",
                f"read budget of {self.buckets_per_s:g} buckets/s spent",
                f"tenant {tenant!r} has spent its read budget of {self.buckets_per_s:g} statistics buckets "
                "per second (HOLISTIC_TENANT_READ_BUCKETS_PER_S); retry later or read narrower windows",
            )
        if wait:
            await asyncio.sleep(wait)

    @contextlib.contextmanager
    def watch(self, tenant: str) -> Iterator[None]:
        """Count one open watch of the tenant for as long as the block runs."""
        total = sum(self._watches.values())
        if total >= self.total_watches:
            READS_REFUSED.labels("watches").inc()
            raise Backpressure(
                RETRY_AFTER_S * 10,
                "watches",
                f"{total} watches open",
                f"this gateway has {total} watches open, its cap (HOLISTIC_MAX_WATCHES); retry later",
            )
        if self._watches[tenant] >= self.tenant_watches:
            READS_REFUSED.labels("tenant-watches").inc()
            raise Backpressure(
                RETRY_AFTER_S * 10,
                f"tenant:{tenant}:watches",
                f"{self._watches[tenant]} watches open",
                f"tenant {tenant!r} has {self._watches[tenant]} watches open, its cap "
                "(HOLISTIC_TENANT_MAX_WATCHES); close one or retry later",
            )
        self._watches[tenant] += 1
        WATCHES_OPEN.inc()
        try:
            yield
        finally:
            WATCHES_OPEN.dec()
            self._watches[tenant] -= 1
            if not self._watches[tenant]:
                del self._watches[tenant]

    def open_watches(self, tenant: str | None = None) -> int:
        return sum(self._watches.values()) if tenant is None else self._watches[tenant]
