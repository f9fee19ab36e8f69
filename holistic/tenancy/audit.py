"""An append-only audit trail per tenant: who deleted what, which tokens were used when, and what the
retention was changed to and what it removed.

One Redis stream per tenant (holistic/redis/keys.py `audit`), never trimmed and kept when the tenant's
data is deleted, readable by an admin (`ReadAudit`, `holistic audit TENANT`). Each entry: the action,
the actor (an admin's name, or a token by the first 16 hex digits of its sha256: never the token),
and its details as JSON. Token use is recorded at most once an hour per token and gateway process,
so a busy tenant costs one entry an hour per token and process, not one per call.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys
from holistic.tenancy.tenants import hash_token

log = logging.getLogger("holistic.tenancy.audit")

DELETE_MODEL = "delete_model"
DELETE_TENANT_DATA = "delete_tenant_data"
TOKEN_USED = "token_used"
RETENTION_CHANGED = "retention_changed"  # written by holistic/redis/lua/retention_record.lua
RAW_TEXT_EXPIRED = "raw_text_expired"  # the janitor (holistic/tenancy/retention_sweep.py)


def fields(action: str, actor: str, details: dict[str, Any]) -> dict[str, str]:
    """One audit entry's stream fields."""
    return {"action": action, "actor": actor, "details": json.dumps(details, sort_keys=True)}


@dataclass(frozen=True)
class Entry:
    id: str  # the stream entry id: milliseconds-sequence
    time_ms: int
    action: str
    actor: str
    details: dict[str, Any]


class Audit:
    def __init__(self, r: aioredis.Redis, keys: Keys, clock: Callable[[], float] = time.time) -> None:
        self.r = r
        self.keys = keys
        self.clock = clock
        self._seen: dict[tuple[str, str], int] = {}  # (tenant, token digest) -> the hour last recorded

    async def record(self, tenant: str, action: str, actor: str, **details: Any) -> str:
        entry = await self.r.xadd(self.keys.audit(tenant), fields(action, actor, details))  # type: ignore[arg-type]
        return entry.decode() if isinstance(entry, bytes) else str(entry)

    async def token_used(self, tenant: str, token: str) -> None:
        """Once an hour per token in this process; a Redis that cannot be reached costs the entry, not the call."""
        digest = hash_token(token)[:16]
        hour = int(self.clock() // 3600)
        if self._seen.get((tenant, digest)) == hour:
            return
        try:
            await self.record(tenant, TOKEN_USED, f"token sha256:{digest}", hour=hour * 3600)
        except RETRYABLE as exc:
            log.warning("audit: token use of tenant %s not recorded (%s)", tenant, exc)
            return
        if len(self._seen) >= 100_000:
            self._seen.clear()
        self._seen[(tenant, digest)] = hour

    async def read(self, tenant: str, after: str = "", count: int = 100) -> list[Entry]:
        """Entries after the id `after` (from the first when empty), oldest first, at most `count`."""
        start = f"({after}" if after else "-"
        rows = await self.r.xrange(self.keys.audit(tenant), min=start, max="+", count=count)
        out = []
        for raw_id, fields in rows:
            eid = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            f = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                 for k, v in fields.items()}  # fmt: skip
            out.append(Entry(eid, int(eid.split("-")[0]), f.get("action", ""), f.get("actor", ""),
                             json.loads(f.get("details") or "{}")))  # fmt: skip
        return out
