"""The janitor: trims the work stream below what every group still needs, and forgets dead consumers."""

from __future__ import annotations

import logging
import threading

import redis

from holistic.queue.work import WorkQueue
from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys
from holistic.settings import Settings

log = logging.getLogger("holistic.queue.janitor")

STALE_CONSUMER_MS = 24 * 3600 * 1000


def sweep(queue: WorkQueue, ensure: list[str], stale_ms: int = STALE_CONSUMER_MS) -> tuple[int, int]:
    """One pass over every consumer group (`ensure`: groups to create first, HOLISTIC_FAMILIES): returns
    (entries trimmed, idle consumers with nothing pending removed)."""
    for family in ensure:
        queue.ensure_group(family)
    trimmed = queue.trim()
    removed = 0
    for family in [str(g["name"]) for g in queue.groups()]:
        for c in queue.r.xinfo_consumers(queue.stream, family):
            name = c["name"].decode() if isinstance(c["name"], bytes) else c["name"]
            if int(c["pending"]) == 0 and int(c["idle"]) >= stale_ms:
                queue.r.xgroup_delconsumer(queue.stream, family, name)
                removed += 1
    return trimmed, removed


def run_janitor(settings: Settings, client: redis.Redis, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    keys = Keys(settings.key_prefix)
    queues = [WorkQueue(client, keys, shard=n) for n in range(settings.queue_shards)]
    log.info("janitor trimming %d queue shard(s) every %.0fs", len(queues), settings.janitor_interval_s)
    while not stop.is_set():
        try:
            for queue in queues:
                trimmed, removed = sweep(queue, list(settings.families))
                if trimmed or removed:
                    log.info("%s: trimmed %d entries, removed %d idle consumers", queue.stream, trimmed, removed)
        except RETRYABLE as exc:
            log.warning("redis unreachable (%s)", exc)
        stop.wait(settings.janitor_interval_s)
