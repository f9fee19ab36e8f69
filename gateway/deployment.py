"""Which metric families are deployed: those with a consumer group on the work stream.

A family's group is created when its first worker starts (or by `holistic families add`), so the
gateway routes and folds by what runs, not by a list in its settings: a batch is stamped for the
families whose group exists on its shard when it is accepted, and a family started later scores from
then on (docs/writing-a-family.md says what it does not see). The backlog monitor refreshes this on
every poll; the submit path only reads memory.
"""

from __future__ import annotations

import time

import redis
import redis.asyncio as aioredis

from holistic.redis.keys import Keys


class Deployment:
    def __init__(
        self, r: aioredis.Redis, keys: Keys, shards: int = 1, ensure: tuple[str, ...] = (), max_age_s: float = 1.0
    ) -> None:
        """`ensure`: families whose groups the gateway keeps (HOLISTIC_FAMILIES), made again when missing
        (a Redis that restarted empty), so batches accepted before their workers return wait for them."""
        self.r = r
        self.keys = keys
        self.shards = shards
        self.ensure = ensure
        self.max_age_s = max_age_s
        self.by_shard: dict[int, tuple[str, ...]] = {}
        self.seen_at = 0.0

    async def observe(self, by_shard: dict[int, list[str]]) -> None:
        """Take what a poll of the groups saw; create the kept families' groups it did not see."""
        for shard in range(self.shards):
            names = by_shard.setdefault(shard, [])
            for family in self.ensure:
                if family not in names:
                    try:
                        await self.r.xgroup_create(self.keys.stream_for(shard), family, id="0", mkstream=True)
                    except redis.ResponseError as exc:
                        if "BUSYGROUP" not in str(exc):
                            raise
                    names.append(family)
        self.by_shard = {shard: tuple(sorted(names)) for shard, names in by_shard.items()}
        self.seen_at = time.monotonic()

    async def refresh(self) -> None:
        """Read every shard's groups now (the backlog monitor does this on its own polls)."""
        by_shard: dict[int, list[str]] = {}
        for shard in range(self.shards):
            try:
                groups = await self.r.xinfo_groups(self.keys.stream_for(shard))
            except redis.ResponseError as exc:  # no stream yet: no group either
                if "no such key" not in str(exc).lower():
                    raise
                groups = []
            by_shard[shard] = [group_name(g) for g in groups]
        await self.observe(by_shard)

    async def families(self) -> list[str]:
        """Every deployed family, on any shard."""
        if time.monotonic() - self.seen_at > self.max_age_s:
            await self.refresh()
        return sorted({name for names in self.by_shard.values() for name in names})

    async def for_shard(self, shard: int) -> tuple[str, ...]:
        """The families a batch on `shard` is for."""
        if not self.seen_at:
            await self.refresh()
        return self.by_shard.get(shard, ())


def group_name(group: dict[str, object]) -> str:
    name = group["name"]
    return name.decode() if isinstance(name, bytes) else str(name)
