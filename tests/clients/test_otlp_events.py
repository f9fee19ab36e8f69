"""GenAI log records held for their spans: kept until the span is answered, late ones refused, bounded."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY

from holistic_client.otlp.events import EventBuffer
from holistic_client.otlp.messages import Event


def count(outcome: str, reason: str) -> float:
    return REGISTRY.get_sample_value("holistic_otlp_log_records_total", {"outcome": outcome, "reason": reason}) or 0.0


def test_held_until_answered_then_late():
    buffer = EventBuffer()
    key, other = ("Bearer a", b"t" * 16, b"s" * 8), ("Bearer b", b"t" * 16, b"s" * 8)
    user, choice = Event("gen_ai.user.message", {}, "Hi"), Event("gen_ai.choice", {}, {"message": "Hello"})
    used = count("used", "")
    assert (buffer.add(key, user), buffer.add(key, choice)) == ("held", "held")
    assert buffer.get(key) == [user, choice] and buffer.get(other) == []  # another token's span: not these
    buffer.finish(key)
    assert count("used", "") - used == 2
    assert buffer.get(key) == [] and buffer.is_done(key)
    assert buffer.add(key, choice) == "late" and buffer.get(key) == []


def test_bounded_oldest_span_first():
    buffer = EventBuffer(max_records=2)
    expired = count("expired", "no_span")
    keys = [("", bytes([i]) * 16, b"s" * 8) for i in range(3)]
    for key in keys:
        buffer.add(key, Event("gen_ai.choice", {}, {"message": "x"}))
    assert [len(buffer.get(k)) for k in keys] == [0, 1, 1]
    assert count("expired", "no_span") - expired == 1


async def test_a_waiting_span_wakes_on_arrival():
    buffer = EventBuffer()
    key = ("", b"t" * 16, b"s" * 8)
    waiter = asyncio.create_task(buffer.arrival(60))
    await asyncio.sleep(0)  # the waiter is waiting
    assert not waiter.done()
    buffer.add(key, Event("gen_ai.choice", {}, {"message": "x"}))
    await asyncio.wait_for(waiter, 10)  # woken by the record, long before its 60 s
