"""DeleteModel: every key of a model removed, and its batches taken off the work and dead-letter streams.

In order:
1. begin (delete_begin.lua, in the model's slot): a lock that refuses the model's submits until the
   deletion ends (submit.lua, or a cluster's groups.lua and ingest.lua), and the model's tombstone, its
   last batch sequence number: apply.lua merges no batch numbered up to it, so a worker that read a batch
   before the deletion and applies it after brings nothing back, and the model's next batch is numbered
   after it. The tombstone lives HOLISTIC_DELETION_TOMBSTONE_S, longer than any entry stays unacknowledged;
2. the model's keys (a SCAN of its hash tag, each key counted under its key family of holistic/stored.py),
   but the tombstone and the lock;
3. its batches' entries on its shard of the work stream and on that shard's dead letters (XDEL, found by
   the entries' `m` and `s` fields);
4. its name in the tenant's model set, then in its index (ListModels re-indexes the names of the set
   that its index lacks);
5. the lock released (it expires by itself LOCK_S after the last step of a deletion that died).
The answer counts what was removed per key family, in the storage reference's order; a second deletion
finds nothing.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis

from holistic.keys import Keys, glob_escape
from holistic.scripts import Scripts
from holistic.settings import Settings
from holistic.stored import INVENTORY, Inventory, Stored
from holistic.tenants import internal_model
from holistic.v1 import evaluation_service_pb2 as es
from holistic.workqueue import shard_of

log = logging.getLogger("holistic.gateway")

SCAN_COUNT = 1000  # keys a SCAN step looks at
CHUNK = 500  # keys unlinked, or stream entries read, a round trip
LOCK_S = 60  # a deletion's lock lives this long after its last renewal (each chunk renews it)


class Deleter:
    def __init__(self, r: aioredis.Redis, settings: Settings) -> None:
        self.r = r
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.inventory = Inventory(self.keys)
        self.scripts = Scripts(r)

    def _row(self, builder: str, *args: str) -> Stored:
        return next(row for row in INVENTORY if row.builder == builder and (not args or row.args == args))

    async def model(self, tenant: str, public: str) -> list[es.RemovedKeys]:
        """Delete the tenant's model `public`; what was removed, per key family."""
        model = internal_model(tenant, public)
        removed: Counter[Stored] = Counter()
        locks = _Locks(self.r)
        try:
            through = {model: await self._begin(model, locks)}
            await self._unlink(self._scan(self.keys.model_keys_glob(glob_escape(model)), locks), removed, locks)
            shard = shard_of(model, self.settings.queue_shards)
            await self._entries(self.keys.stream_for(shard), through, self._row("stream_for"), removed, locks)
            dead = self._row("dead_letters_for")
            await self._entries(self.keys.dead_letters_for(shard), through, dead, removed, locks)
            await self._names(tenant, [public], removed)
        finally:
            await locks.release()
        return self._report(removed)

    async def _begin(self, model: str, locks: _Locks) -> int:
        """delete_begin.lua: the model's lock and tombstone; its tombstone's number."""
        keys = [self.keys.sequence(model), self.keys.deleting(model), self.keys.deleted(model)]
        locks.held.append(keys[1])
        args = [LOCK_S * 1000, self.settings.deletion_tombstone_s]
        return int(await self.scripts.delete_begin(keys=keys, args=args))

    async def _scan(self, glob: str, locks: _Locks) -> Any:
        """The keys matching glob but the deletions' own (tombstones, locks)."""
        async for raw in self.r.scan_iter(match=glob, count=SCAN_COUNT):
            key = _text(raw)
            if self.inventory.describe(key) not in self._own:
                yield key

    @property
    def _own(self) -> tuple[Stored, ...]:
        return self._row("deleted"), self._row("deleting")

    async def _unlink(self, keys: Any, removed: Counter[Stored], locks: _Locks) -> None:
        """UNLINK the keys (an async iterable), a chunk a round trip, counting each one removed under its row."""
        chunk: list[str] = []
        async for key in keys:
            chunk.append(key)
            if len(chunk) >= CHUNK:
                await self._unlink_chunk(chunk, removed)
                await locks.renew()
                chunk = []
        if chunk:
            await self._unlink_chunk(chunk, removed)

    async def _unlink_chunk(self, chunk: list[str], removed: Counter[Stored]) -> None:
        pipe = self.r.pipeline(transaction=False)
        for key in chunk:
            pipe.execute_command("UNLINK", key)  # (a cluster pipeline's unlink() is a coroutine)
        for key, gone in zip(chunk, await pipe.execute(), strict=True):
            row = self.inventory.describe(key)
            if gone and row is not None:
                removed[row] += int(gone)
            elif gone:
                log.warning("deleted a key no row of holistic/stored.py describes: %s", key)

    async def _entries(
        self, stream: str, through: dict[str, int], row: Stored, removed: Counter[Stored], locks: _Locks
    ) -> None:
        """XDEL the stream's entries of the models numbered up to their tombstones (fields `m` and `s`),
        read a page at a time."""
        wanted = {m.encode(): n for m, n in through.items()}
        start = "-"
        while True:
            page = await self.r.xrange(stream, min=start, max="+", count=CHUNK)
            ids = [eid for eid, fields in page if _numbered_up_to(wanted.get(fields.get(b"m", b"")), fields)]
            if ids:
                removed[row] += int(await self.r.xdel(stream, *ids))
            if len(page) < CHUNK:
                return
            await locks.renew()
            start = "(" + _text(page[-1][0])

    async def _names(self, tenant: str, publics: Iterable[str], removed: Counter[Stored]) -> None:
        """The models' names out of the tenant's model set, then out of its index."""
        names = list(publics)
        which = ("default",) if tenant == "default" else ("<tenant>",)
        removed[self._row("models", *which)] += int(await self.r.srem(self.keys.models(tenant), *names))  # type: ignore[misc]
        removed[self._row("models_index", *which)] += int(await self.r.zrem(self.keys.models_index(tenant), *names))

    def _report(self, removed: Counter[Stored]) -> list[es.RemovedKeys]:
        return [
            es.RemovedKeys(key_family=self.inventory.label(row), count=removed[row])
            for row in INVENTORY
            if removed[row]
        ]


class _Locks:
    """The deletion locks one call holds: renewed as it goes, released at its end."""

    def __init__(self, r: aioredis.Redis) -> None:
        self.r = r
        self.held: list[str] = []
        self._renewed = time.monotonic()

    async def renew(self) -> None:
        if time.monotonic() - self._renewed < LOCK_S / 3:
            return
        self._renewed = time.monotonic()
        for key in self.held:
            await self.r.pexpire(key, LOCK_S * 1000)

    async def release(self) -> None:
        for key in self.held:
            await self.r.delete(key)


def _numbered_up_to(through: int | None, fields: dict[bytes, bytes]) -> bool:
    """Whether an entry is a batch numbered up to `through` (None: not of a model being deleted)."""
    if through is None:
        return False
    try:
        return int(fields.get(b"s", b"")) <= through
    except ValueError:  # no number: not a batch of the model's that anything could apply
        return True


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
