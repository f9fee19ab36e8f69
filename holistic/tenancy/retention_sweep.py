"""The janitor's part of per-tenant retention (holistic/tenancy/retention.py): what TTLs cannot do.

Workers write each statistics bucket and per-instance hash with the TTL of its tenant's retention, so the
steady state costs nothing here. The janitor does the rest:

- raw text on the streams: every pass, the entries of a tenant with a raw-text limit that are older than it
  leave the work stream and the dead letters (XACK in every group, then XDEL). An entry still waiting for a
  family is dropped too (retention wins over the backlog): it is counted as `unapplied` in the tenant's
  audit entry, never dropped silently. Each pass reads the work stream only up to the oldest cut-off (the
  backlog cap bounds it) and the dead letters whole (what failed: few);
- a change of the retention file: recorded once per change in the tenant's audit trail, old -> new
  (retention_record.lua), then one SCAN of the tenant's keys gives what was written under the old
  retention the TTL of the new one (EXPIRE LT: only ever shorter), removing what is already past it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from google.protobuf.message import DecodeError

from holistic.profile.pending import EXPIRED_BATCHES, EXPIRED_PREDICTIONS
from holistic.profile.windows import DAY, TIERS
from holistic.queue.work import WorkQueue, id_key
from holistic.redis.keys import Keys, glob_escape
from holistic.redis.scripts import Scripts
from holistic.redis.stored import Inventory
from holistic.tenancy import audit
from holistic.tenancy.retention import Retention, RetentionStore
from holistic.tenancy.tenants import internal_model, split_model
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest

log = logging.getLogger("holistic.queue.janitor")

PAGE = 500  # stream entries read, or keys scanned, a round trip
ACTOR = "janitor"


@dataclass
class Expired:
    """One tenant's raw text removed by one pass over one shard."""

    stream_entries: int = 0
    unapplied: int = 0  # of the stream entries: some family had not applied them yet
    dead_letters: int = 0
    by_family: Counter[str] = field(default_factory=Counter)  # unapplied, per family that had not applied it


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _canonical(retention: Retention) -> str:
    return json.dumps(retention.as_dict(), sort_keys=True)


def record_changes(
    r: redis.Redis,
    keys: Keys,
    store: RetentionStore,
    scripts: Scripts,
    before: Callable[[str, Retention], None] | None = None,
) -> dict[str, Retention]:
    """Audit each tenant whose retention differs from the one recorded (once, whoever records it first);
    the tenants this call recorded a change of, with their retention now. before(tenant, retention) runs
    ahead of the record (the janitor shortens what is stored): a pass that dies in it leaves the change
    unrecorded, so the next pass does it again."""
    current = store.tenants()
    recorded = {_text(t) for t in r.smembers(keys.retention_tenants())}  # type: ignore[union-attr]
    actor = f"{ACTOR} (HOLISTIC_RETENTION_FILE {store.path})" if store.path else ACTOR
    default = _canonical(store.default)
    changed: dict[str, Retention] = {}
    for tenant in sorted(set(current) | recorded):
        retention = current.get(tenant, store.default)
        now = _canonical(retention)
        raw = r.get(keys.retention(tenant))
        was = None if raw is None else _text(raw)  # type: ignore[arg-type]
        if was == now:
            continue
        if tenant not in recorded:
            r.sadd(keys.retention_tenants(), tenant)
        if before is not None and (was or default) != now:  # a tenant never recorded had the global retention
            before(tenant, retention)
        old = scripts.retention_record(keys=[keys.retention(tenant), keys.audit(tenant)], args=[now, default, actor])
        if old:
            log.info("retention of tenant %s changed: %s -> %s", tenant, _text(old), now)
            changed[tenant] = retention
    return changed


def expire_raw_text(queue: WorkQueue, store: RetentionStore, now_s: float | None = None) -> dict[str, Expired]:
    """Remove the shard's entries (work stream and dead letters) of tenants past their raw-text retention;
    what went, per tenant, each recorded in the tenant's audit trail."""
    now_ms = int((time.time() if now_s is None else now_s) * 1000)
    limits = {t: ret.raw_text_s for t, ret in store.tenants().items() if ret.raw_text_s is not None}
    if not limits:
        return {}
    cutoff = {t: now_ms - s * 1000 for t, s in limits.items()}  # entries of tenant t before it go
    latest = max(cutoff.values())
    out: dict[str, Expired] = {}

    def past(fields: dict[bytes, bytes], at_ms: int) -> str | None:
        tenant = split_model(_text(fields.get(b"m", b"")))[0]
        return tenant if tenant in cutoff and at_ms < cutoff[tenant] else None

    groups = {str(g["name"]): str(g["last-delivered-id"]) for g in queue.groups()}
    pending = {g: _pending_upto(queue, g, latest) for g in groups}
    unapplied: list[tuple[str, int, list[str]]] = []  # (model, predictions, families that had not applied it)
    start = "-"
    while True:
        page = queue.r.xrange(queue.stream, min=start, max=str(latest - 1), count=PAGE)
        ids: list[str] = []
        for raw_id, fields in page:
            eid = _text(raw_id)
            tenant = past(fields, id_key(eid)[0])
            if tenant is None:
                continue
            ids.append(eid)
            e = out.setdefault(tenant, Expired())
            e.stream_entries += 1
            stamped = _text(fields.get(b"f", b"")).split(",")
            waiting = [g for g, last in groups.items()
                       if g in stamped and (eid in pending[g] or id_key(eid) > id_key(last))]  # fmt: skip
            if waiting:
                e.unapplied += 1
                e.by_family.update(waiting)
                unapplied.append((_text(fields[b"m"]), _prediction_count(fields), waiting))
        if ids:
            for g in groups:
                queue.r.xack(queue.stream, g, *ids)
            queue.r.xdel(queue.stream, *ids)
            _count_expired(queue.r, queue.keys, unapplied)
            unapplied = []
        if len(page) < PAGE:
            break
        start = "(" + _text(page[-1][0])
    start = "-"
    while True:  # dead letters: aged by the original entry's id
        page = queue.r.xrange(queue.dlq, min=start, max="+", count=PAGE)
        ids = []
        for raw_id, fields in page:
            src = _text(fields.get(b"src_id", raw_id))
            tenant = past(fields, id_key(src)[0])
            if tenant is not None:
                ids.append(_text(raw_id))
                out.setdefault(tenant, Expired()).dead_letters += 1
        if ids:
            queue.r.xdel(queue.dlq, *ids)
        if len(page) < PAGE:
            break
        start = "(" + _text(page[-1][0])
    for tenant, e in out.items():
        details: dict[str, Any] = {"shard": queue.shard, "raw_text_s": limits[tenant], "stream_entries":
                                   e.stream_entries, "unapplied": e.unapplied, "dead_letters": e.dead_letters,
                                   "unapplied_by_family": dict(sorted(e.by_family.items()))}  # fmt: skip
        queue.r.xadd(queue.keys.audit(tenant), audit.fields(audit.RAW_TEXT_EXPIRED, ACTOR, details))  # type: ignore[arg-type]
        if e.unapplied:
            log.warning("tenant %s: dropped %d entries some family had not applied yet, past its raw-text "
                        "retention (%d s)", tenant, e.unapplied, limits[tenant])  # fmt: skip
    return out


def _prediction_count(fields: dict[bytes, bytes]) -> int:
    """The predictions of a batch's entry (its request bytes, parsed only for a batch dropped unapplied)."""
    try:
        return len(SubmitPredictionsRequest.FromString(fields.get(b"e", b"")).predictions)
    except DecodeError:
        return 0


def _count_expired(r: redis.Redis, keys: Keys, unapplied: list[tuple[str, int, list[str]]]) -> None:
    """Count the batches dropped before a family applied them in their model's meta, per family, so the
    profile's pending no longer waits for them (holistic/profile/pending.py)."""
    pipe = r.pipeline(transaction=False)
    for model, n, families in unapplied:
        for family in families:
            pipe.hincrby(keys.meta(model), f"{EXPIRED_PREDICTIONS}:{family}", n)
            pipe.hincrby(keys.meta(model), f"{EXPIRED_BATCHES}:{family}", 1)
    pipe.execute()


def _pending_upto(queue: WorkQueue, group: str, latest_ms: int) -> set[str]:
    """The group's pending entry ids older than latest_ms, a page at a time."""
    out: set[str] = set()
    start = "-"
    while True:
        rows = queue.r.xpending_range(queue.stream, group, min=start, max=str(latest_ms - 1), count=PAGE)
        out.update(_text(row["message_id"]) for row in rows)
        if len(rows) < PAGE:
            return out
        start = "(" + _text(rows[-1]["message_id"])


def shorten_stored(
    r: redis.Redis, keys: Keys, tenant: str, retention: Retention, instance_ttl_s: int, now_s: float | None = None
) -> tuple[int, int]:
    """One SCAN of the tenant's model keys: each minute, hour or day bucket and per-instance hash gets the TTL
    its tenant's retention gives it, counted from the end of its bucket (or day), or goes if already past
    it; a TTL is only ever shortened (EXPIRE LT). Returns (keys removed, keys given a shorter TTL)."""
    now = time.time() if now_s is None else now_s
    inventory = Inventory(keys)
    tier_secs = dict(TIERS)
    raw = instance_ttl_s if retention.raw_text_s is None else min(retention.raw_text_s, instance_ttl_s)
    glob = keys.model_keys_glob(glob_escape(internal_model(tenant, "")) + "*")
    removed = shortened = 0
    batch: list[tuple[str, int]] = []

    def flush() -> None:
        nonlocal removed, shortened
        pipe = r.pipeline(transaction=False)
        for key, left in batch:
            pipe.unlink(key) if left <= 0 else pipe.execute_command("EXPIRE", key, left, "LT")
        for (_, left), reply in zip(batch, pipe.execute(), strict=True):
            if left <= 0:
                removed += int(reply)
            else:
                shortened += int(reply)
        batch.clear()

    for raw_key in r.scan_iter(match=glob, count=PAGE):
        key = _text(raw_key)
        model, row = inventory.model_of(key), inventory.describe(key)
        if model is None or row is None or split_model(model)[0] != tenant:
            continue
        tier, index = key.rsplit(":", 2)[-2:]
        if not index.isdigit():
            continue
        if row.builder == "stats" and tier in tier_secs:
            ttl = retention.tier_ttl(tier)
            if not ttl:
                continue
            end = (int(index) + 1) * tier_secs[tier]
        elif row.builder == "instances":
            ttl, end = raw, (int(index) + 1) * DAY
        else:
            continue
        batch.append((key, math.ceil(end + ttl - now)))
        if len(batch) >= PAGE:
            flush()
    if batch:
        flush()
    return removed, shortened
