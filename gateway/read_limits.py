"""Per-tenant and per-gateway bounds on reads: concurrent profile reads and open watches.

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

WAITING_PER_SLOT = 4  # reads a tenant may have queued per concurrent slot before it is refused
RETRY_AFTER_S = 0.5


@dataclass
class ReadLimits:
    concurrent_reads: int
    tenant_watches: int
    total_watches: int
    _slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _queued: Counter[str] = field(default_factory=Counter)
    _watches: Counter[str] = field(default_factory=Counter)

    @contextlib.asynccontextmanager
    async def read(self, tenant: str, queue: bool = False) -> AsyncIterator[None]:
        """Hold one of the tenant's read slots for the duration of a profile read. queue: wait for a
        slot however many wait (watches' reads: their number is capped by the watch caps)."""
        slot = self._slots.get(tenant)
        if slot is None:
            slot = self._slots[tenant] = asyncio.Semaphore(self.concurrent_reads)
        if not queue and self._queued[tenant] >= self.concurrent_reads * (1 + WAITING_PER_SLOT):
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
                yield
        finally:
            self._queued[tenant] -= 1
            if not self._queued[tenant]:
                del self._queued[tenant]

    @contextlib.contextmanager
    def watch(self, tenant: str) -> Iterator[None]:
        """Count one open watch of the tenant for as long as the block runs."""
        total = sum(self._watches.values())
        if total >= self.total_watches:
            raise Backpressure(
                RETRY_AFTER_S * 10,
                "watches",
                f"{total} watches open",
                f"this gateway has {total} watches open, its cap (HOLISTIC_MAX_WATCHES); retry later",
            )
        if self._watches[tenant] >= self.tenant_watches:
            raise Backpressure(
                RETRY_AFTER_S * 10,
                f"tenant:{tenant}:watches",
                f"{self._watches[tenant]} watches open",
                f"tenant {tenant!r} has {self._watches[tenant]} watches open, its cap "
                "(HOLISTIC_TENANT_MAX_WATCHES); close one or retry later",
            )
        self._watches[tenant] += 1
        try:
            yield
        finally:
            self._watches[tenant] -= 1
            if not self._watches[tenant]:
                del self._watches[tenant]

    def open_watches(self, tenant: str | None = None) -> int:
        return sum(self._watches.values()) if tenant is None else self._watches[tenant]
