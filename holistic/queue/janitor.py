"""The janitor: trims the work stream below what every group still needs, forgets dead consumers, and
enforces each tenant's retention (holistic/tenancy/retention_sweep.py)."""

from __future__ import annotations

import logging
import threading

import redis

from holistic.queue.work import WorkQueue
from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys
from holistic.settings import Settings
from holistic.tenancy.retention import Retention, RetentionStore
from holistic.tenancy.retention_sweep import expire_raw_text, record_changes, shorten_stored

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


def enforce_retention(
    settings: Settings, client: redis.Redis, queues: list[WorkQueue], store: RetentionStore, now_s: float | None = None
) -> None:
    """Per-tenant retention (holistic/tenancy/retention_sweep.py): changes audited and applied to what is stored,
    raw text past its tenant's limit removed from every shard."""
    keys, scripts = queues[0].keys, queues[0].scripts

    def shorten(tenant: str, retention: Retention) -> None:
        gone, shortened = shorten_stored(client, keys, tenant, retention, settings.instance_ttl_s, now_s)
        log.info("tenant %s: %d keys past its new retention removed, %d given a shorter TTL", tenant, gone, shortened)

    record_changes(client, keys, store, scripts, before=shorten)
    for queue in queues:
        for tenant, e in expire_raw_text(queue, store, now_s).items():
            log.info("%s: tenant %s's raw text past retention: %d entries (%d unapplied), %d dead letters removed",
                     queue.stream, tenant, e.stream_entries, e.unapplied, e.dead_letters)  # fmt: skip


def run_janitor(settings: Settings, client: redis.Redis, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    keys = Keys(settings.key_prefix)
    queues = [WorkQueue(client, keys, shard=n) for n in range(settings.queue_shards)]
    store = RetentionStore(settings)
    log.info("janitor trimming %d queue shard(s) every %.0fs", len(queues), settings.janitor_interval_s)
    while not stop.is_set():
        try:
            for queue in queues:
                trimmed, removed = sweep(queue, list(settings.families))
                if trimmed or removed:
                    log.info("%s: trimmed %d entries, removed %d idle consumers", queue.stream, trimmed, removed)
            enforce_retention(settings, client, queues, store)
        except RETRYABLE as exc:
            log.warning("redis unreachable (%s)", exc)
        stop.wait(settings.janitor_interval_s)
