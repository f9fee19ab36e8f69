"""GenAI log records waiting for their span: OTLP logs and traces come in separate requests, in any order.

Held by (authorization, trace id, span id) for at most HOLD_S and MAX_RECORDS in all (the oldest go first, counted as
expired); a span's records are dropped once its request is answered. One buffer per process, shared by
the gRPC and HTTP servers on one event loop, so a span and its log records must reach the same replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict

from prometheus_client import Counter

from holistic_client.otlp.messages import Event

Key = tuple[object, bytes, bytes]  # (authorization, trace id, span id)
HOLD_S = 120.0
MAX_RECORDS = 20_000  # held for seconds normally; a bound on memory (messages can be long)
DONE_KEPT = 100_000

LOG_RECORDS = Counter(
    "holistic_otlp_log_records",
    "GenAI log records received, by outcome (held, used, ignored, rejected, expired) and reason.",
    ["outcome", "reason"],
)


class EventBuffer:
    def __init__(self, hold_s: float = HOLD_S, max_records: int = MAX_RECORDS) -> None:
        self.hold_s = hold_s
        self.max_records = max_records
        self._held: OrderedDict[Key, tuple[float, list[Event]]] = OrderedDict()
        self._count = 0
        self._done: OrderedDict[Key, None] = OrderedDict()
        self._arrived: asyncio.Event | None = None

    def add(self, key: Key, event: Event) -> str:
        """Hold one record for its span; the outcome ("held", or "late" once the span was answered)."""
        if key in self._done:
            return "late"
        now = time.monotonic()
        self._held.setdefault(key, (now, []))[1].append(event)
        self._count += 1
        while self._held and (self._count > self.max_records or next(iter(self._held.values()))[0] < now - self.hold_s):
            _, (_, events) = self._held.popitem(last=False)
            self._count -= len(events)
            LOG_RECORDS.labels("expired", "no_span").inc(len(events))
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None
        return "held"

    def get(self, key: Key) -> list[Event]:
        held = self._held.get(key)
        return list(held[1]) if held else []

    def is_done(self, key: Key) -> bool:
        return key in self._done

    def finish(self, key: Key) -> None:
        """The span's request is answered: its records go (counted as used), later ones are late."""
        held = self._held.pop(key, None)
        if held:
            self._count -= len(held[1])
            LOG_RECORDS.labels("used", "").inc(len(held[1]))
        self._done[key] = None
        if len(self._done) > DONE_KEPT:
            self._done.popitem(last=False)

    async def arrival(self, timeout_s: float) -> None:
        """Until the next record is held, or timeout_s."""
        if timeout_s <= 0:
            return
        if self._arrived is None:
            self._arrived = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._arrived.wait(), timeout_s)
