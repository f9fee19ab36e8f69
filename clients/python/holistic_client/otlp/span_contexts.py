"""The spans this receiver made predictions of, as an evaluation log record in their context sees them.

A log record carries no model: one in a span's context (its trace and span ids) inherits what that span's
prediction got (`holistic.model`, `holistic.scenario`, `holistic.id`), for the newest KEPT spans, by
(authorization, "<trace id>-<span id>"), so no one else's records reach a tenant's spans. Logs and traces
are exported separately, in any order: a record that comes before its span waits here for it (at most
HOLISTIC_OTLP_EVENT_WAIT_S), woken when a traces request has submitted its spans' predictions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Iterable

from prometheus_client import Counter

KEPT = 100_000
SPAN_WAITS = Counter(
    "holistic_otlp_evaluation_span_waits",
    "Evaluation log records that came before their span and waited for it (HOLISTIC_OTLP_EVENT_WAIT_S), by "
    "outcome: joined (the span came) or timed_out (joined by the span context alone).",
    ["outcome"],
)
SpanKey = tuple[object, str]  # (authorization metadata, "<trace id>-<span id>")


class SpanContexts:
    """Made on the event loop that serves the receiver (its wake-up event belongs to that loop)."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._known: OrderedDict[SpanKey, dict[str, str]] = OrderedDict()
        self._arrived: asyncio.Event | None = None

    def get(self, key: SpanKey) -> dict[str, str] | None:
        return self._known.get(key)

    def remember(self, key: SpanKey, context: dict[str, str]) -> None:
        self._known[key] = context
        self._known.move_to_end(key)
        while len(self._known) > self.kept:
            self._known.popitem(last=False)

    def arrived(self) -> None:
        """A traces request submitted its spans' predictions: records waiting for them may join now."""
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None

    async def wait_for(self, keys: Iterable[SpanKey], timeout_s: float) -> None:
        """Until every key is known, or timeout_s."""
        wanted = set(keys)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while any(k not in self._known for k in wanted) and loop.time() < deadline:
            if self._arrived is None:
                self._arrived = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), deadline - loop.time())
