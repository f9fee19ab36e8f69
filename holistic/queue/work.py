"""The work stream, seen from workers, the janitor and operators (sync redis-py).

One consumer group per metric family; replicas are consumers in it. Crashed consumers' entries
are claimed one at a time (a crash strands everything read with it, and every claim bumps the
delivery count, so claiming in bulk would dead-letter healthy neighbours). Dead-lettering is one
Lua script, conditional on XACK. The janitor trims with MINID below the oldest entry any group
still needs; XADD MAXLEN would silently drop undelivered entries.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import redis

from holistic.redis.keys import Keys
from holistic.redis.scripts import Scripts


@dataclass(frozen=True)
class Pending:
    id: str
    consumer: str
    idle_ms: int
    deliveries: int


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def next_id(entry_id: str) -> str:
    ms, _, seq = entry_id.partition("-")
    return f"{ms}-{int(seq or 0) + 1}"


def id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def shard_of(model: str, shards: int) -> int:
    """The queue shard of a model's batches: one model stays in one stream, so its batches stay ordered."""
    return zlib.crc32(model.encode()) % shards if shards > 1 else 0


class WorkQueue:
    """One shard of the work stream and its dead letters."""

    def __init__(self, client: redis.Redis, keys: Keys, scripts: Scripts | None = None, shard: int = 0) -> None:
        self.r = client
        self.keys = keys
        self.shard = shard
        self.stream = keys.stream_for(shard)
        self.dlq = keys.dead_letters_for(shard)
        self.scripts = scripts or Scripts(client)

    # --- groups ---------------------------------------------------------------------------
    def ensure_group(self, group: str) -> bool:
        """Create the family's group at the start of the stream; False when it existed."""
        try:
            self.r.xgroup_create(self.stream, group, id="0", mkstream=True)
            return True
        except redis.ResponseError as exc:
            if "BUSYGROUP" in str(exc):
                return False
            # at maxmemory Redis refuses XGROUP CREATE before it looks for the group: a worker or the
            # janitor starting then must still find its existing group (the janitor's trim frees memory)
            if isinstance(exc, redis.exceptions.OutOfMemoryError) and any(g["name"] == group for g in self.groups()):
                return False
            raise

    def groups(self) -> list[dict[str, object]]:
        try:
            raw = self.r.xinfo_groups(self.stream)
        except redis.ResponseError as exc:
            if "no such key" in str(exc).lower():
                return []
            raise
        return [{_s(k): (_s(v) if isinstance(v, bytes) else v) for k, v in g.items()} for g in raw]

    def backlog(self) -> dict[str, int]:
        """Per group: entries not yet delivered (lag) plus delivered but unacknowledged."""
        out: dict[str, int] = {}
        groups = self.groups()
        length = self.r.xlen(self.stream) if groups else 0
        for g in groups:
            lag = g.get("lag")
            out[str(g["name"])] = int(g.get("pending", 0)) + (int(lag) if lag is not None else length)  # type: ignore[call-overload]
        return out

    # --- consuming -------------------------------------------------------------------------
    def read(self, group: str, consumer: str, count: int, block_ms: int) -> list[tuple[str, dict[bytes, bytes]]]:
        reply = self.r.xreadgroup(group, consumer, {self.stream: ">"}, count=count, block=block_ms)
        if not reply:
            return []
        return [(_s(eid), fields) for eid, fields in reply[0][1]]

    def idle_pending(self, group: str, idle_ms: int, count: int = 100) -> list[Pending]:
        rows = self.r.xpending_range(self.stream, group, min="-", max="+", count=count, idle=idle_ms)
        return [
            Pending(_s(r["message_id"]), _s(r["consumer"]), int(r["time_since_delivered"]), int(r["times_delivered"]))
            for r in rows
        ]

    def entry(self, entry_id: str) -> dict[bytes, bytes] | None:
        """One entry's fields; None when it was trimmed or deleted."""
        rows = self.r.xrange(self.stream, entry_id, entry_id, count=1)
        return rows[0][1] if rows else None

    def claim(self, group: str, consumer: str, idle_ms: int, entry_id: str) -> tuple[str, dict[bytes, bytes]] | None:
        """Take over one idle entry. None when another consumer got it first."""
        claimed = self.r.xclaim(self.stream, group, consumer, idle_ms, [entry_id])
        if not claimed:
            return None
        eid, fields = claimed[0]
        return _s(eid), fields or {}

    def ack(self, group: str, ids: list[str]) -> int:
        return int(self.r.xack(self.stream, group, *ids)) if ids else 0

    def deadletter(self, group: str, entry_id: str, deliveries: int, reason: str) -> bool:
        moved = self.scripts.deadletter(keys=[self.stream, self.dlq], args=[group, entry_id, deliveries, reason[:500]])
        return bool(moved)

    # --- dead letters ---------------------------------------------------------------------
    def dead_letters(self, count: int = 100) -> list[tuple[str, dict[str, str]]]:
        rows = self.r.xrange(self.dlq, count=count)
        out = []
        for eid, fields in rows:
            info = {_s(k): _s(v) for k, v in fields.items() if _s(k) not in ("e", "h")}  # envelope bytes
            out.append((_s(eid), info))
        return out

    def replay(self, dead_letter_id: str) -> str | None:
        new_id = self.scripts.replay(keys=[self.dlq, self.stream], args=[dead_letter_id])
        return _s(new_id) if new_id else None

    # --- trimming ----------------------------------------------------------------------------
    def trim_floor(self) -> str | None:
        """Smallest entry id some group still needs, or None when no group exists."""
        floor: str | None = None
        for g in self.groups():
            needed = next_id(str(g["last-delivered-id"]))
            if int(g.get("pending", 0)):  # type: ignore[call-overload]
                summary = self.r.xpending(self.stream, str(g["name"]))
                # acked since XINFO: Redis answers {pending: 0, min: None}; then all it was given is done,
                # and what it is given later comes after the last-delivered id read above
                if summary.get("min") is not None:
                    needed = _s(summary["min"])
            if floor is None or id_key(needed) < id_key(floor):
                floor = needed
        return floor

    def trim(self) -> int:
        """XTRIM MINID at the floor: drops only what every group is done with."""
        floor = self.trim_floor()
        if floor is None:
            return 0
        return int(self.r.xtrim(self.stream, minid=floor, approximate=False))
