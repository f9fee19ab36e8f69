"""DeleteModel and DeleteTenantData: every key of a model (or of each model of a tenant) removed, and its
batches taken off the work and dead-letter streams.

Per model, in order:
1. begin (delete_begin.lua, in the model's slot): a lock that refuses the model's submits until the
   deletion ends (submit.lua, or a cluster's groups.lua and ingest.lua), and the model's tombstone, its
   last batch sequence number: apply.lua merges no batch numbered up to it, so a worker that read a batch
   before the deletion and applies it after brings nothing back, and the model's next batch is numbered
   after it. The tombstone lives HOLISTIC_DELETION_TOMBSTONE_S, longer than any entry stays unacknowledged;
2. the model's keys (a SCAN of its hash tag, each key counted under its key family of holistic/redis/stored.py),
   but the tombstone and the lock;
3. its batches' entries on its shard of the work stream and on that shard's dead letters (XDEL, found by
   the entries' `m` and `s` fields);
4. its name in the tenant's model set, then in its index (ListModels re-indexes the names of the set
   that its index lacks); a tenant's deletion removes the set, the index and its rate counters whole;
5. the lock released (it expires by itself LOCK_S after the last step of a deletion that died).
A tenant's models are those of its model set, and any other found under its names by the SCAN (a model
whose name a crashed cluster gateway never added to the set): each is begun before any key of it goes.
The answer counts what was removed per key family, in the storage reference's order; a second deletion
finds nothing.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable

import redis.asyncio as aioredis

from holistic.queue.work import shard_of
from holistic.redis.connection import set_chunks
from holistic.redis.keys import Keys, glob_escape
from holistic.redis.scripts import Scripts
from holistic.redis.stored import INVENTORY, Inventory, Stored
from holistic.settings import Settings
from holistic.tenancy.tenants import DEFAULT_TENANT, internal_model, split_model
from holistic.v1 import evaluation_service_pb2 as es

log = logging.getLogger("holistic.gateway")

SCAN_COUNT = 1000  # keys a SCAN step looks at
CHUNK = 500  # keys unlinked, stream entries read or model names read, a round trip
LOCK_S = 60  # a deletion's lock lives this long after its last renewal (each chunk renews it)


class Deleter:
    def __init__(self, r: aioredis.Redis, settings: Settings) -> None:
        self.r = r
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.inventory = Inventory(self.keys)
        self.scripts = Scripts(r)

    async def model(self, tenant: str, public: str) -> list[es.RemovedKeys]:
        """Delete the tenant's model `public`; what was removed, per key family."""
        model = internal_model(tenant, public)
        removed: Counter[Stored] = Counter()
        async with _Locks(self.r) as locks:
            through = {model: await self._begin(model, locks)}
            glob = self.keys.model_keys_glob(glob_escape(model))
            await self._models(glob, through, lambda m: m == model, removed, locks)
            which = _tenant_rows(tenant)
            removed[_row("models", which)] += int(await self.r.srem(self.keys.models(tenant), public))  # type: ignore[misc]
            removed[_row("models_index", which)] += int(await self.r.zrem(self.keys.models_index(tenant), public))
        return self._report(removed)

    async def tenant(self, tenant: str) -> tuple[list[str], list[es.RemovedKeys]]:
        """Delete every model of the tenant, then its model set, index and rate counters; the models deleted
        (public names, sorted) and what was removed, per key family."""
        removed: Counter[Stored] = Counter()
        async with _Locks(self.r) as locks:
            through: dict[str, int] = {}
            async for names in set_chunks(self.r, self.keys.models(tenant), CHUNK):
                for name in names:
                    model = internal_model(tenant, _text(name))
                    through[model] = await self._begin(model, locks)
            glob = self.keys.model_keys_glob(glob_escape(internal_model(tenant, "")) + "*")  # default: every model
            await self._models(glob, through, lambda m: split_model(m)[0] == tenant, removed, locks)
            own = [self.keys.models(tenant), self.keys.models_index(tenant)]
            await self._unlink(_also(own, self._scan(self.keys.tenant_keys_glob(glob_escape(tenant)))), removed, locks)
        return sorted(split_model(m)[1] for m in through), self._report(removed)

    async def _models(
        self,
        glob: str,
        through: dict[str, int],
        owned: Callable[[str], bool],
        removed: Counter[Stored],
        locks: _Locks,
    ) -> None:
        """Steps 2 and 3 for the models of `through` (begun, with their tombstones' numbers), and for any other
        model `owned` says is being deleted whose keys the SCAN of glob finds: begun first, added to through."""

        async def keys() -> AsyncIterator[str]:
            async for key in self._scan(glob):
                model = self.inventory.model_of(key)
                if model is None or not owned(model):
                    continue
                if model not in through:
                    through[model] = await self._begin(model, locks)
                yield key

        await self._unlink(keys(), removed, locks)
        for shard in sorted({shard_of(m, self.settings.queue_shards) for m in through}):
            await self._entries(self.keys.stream_for(shard), through, _row("stream_for"), removed, locks)
            await self._entries(self.keys.dead_letters_for(shard), through, _row("dead_letters_for"), removed, locks)

    async def _begin(self, model: str, locks: _Locks) -> int:
        """delete_begin.lua: the model's lock and tombstone; its tombstone's number."""
        keys = [self.keys.sequence(model), self.keys.deleting(model), self.keys.deleted(model)]
        locks.held.append(keys[1])
        args = [LOCK_S * 1000, self.settings.deletion_tombstone_s]
        return int(await self.scripts.delete_begin(keys=keys, args=args))

    async def _scan(self, glob: str) -> AsyncIterator[str]:
        """The keys matching glob but the deletions' own (tombstones, locks)."""
        own = (_row("deleted"), _row("deleting"))
        async for raw in self.r.scan_iter(match=glob, count=SCAN_COUNT):
            key = _text(raw)
            if self.inventory.describe(key) not in own:
                yield key

    async def _unlink(self, keys: AsyncIterator[str], removed: Counter[Stored], locks: _Locks) -> None:
        """UNLINK the keys, a chunk a round trip, counting each one removed under its row."""
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
                log.warning("deleted a key no row of holistic/redis/stored.py describes: %s", key)

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

    async def __aenter__(self) -> _Locks:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._each("DEL")

    async def renew(self) -> None:
        if time.monotonic() - self._renewed >= LOCK_S / 3:
            self._renewed = time.monotonic()
            await self._each("PEXPIRE", LOCK_S * 1000)

    async def _each(self, command: str, *args: object) -> None:
        for i in range(0, len(self.held), CHUNK):
            pipe = self.r.pipeline(transaction=False)
            for key in self.held[i : i + CHUNK]:
                pipe.execute_command(command, key, *args)
            await pipe.execute()


def _row(builder: str, args: tuple[str, ...] | None = None) -> Stored:
    return next(row for row in INVENTORY if row.builder == builder and (args is None or row.args == args))


def _tenant_rows(tenant: str) -> tuple[str, ...]:
    """The args of the inventory's rows for the tenant's model set and index."""
    return (DEFAULT_TENANT,) if tenant == DEFAULT_TENANT else ("<tenant>",)


async def _also(first: list[str], then: AsyncIterator[str]) -> AsyncIterator[str]:
    """first, then the keys of `then` not among them."""
    for key in first:
        yield key
    async for key in then:
        if key not in first:
            yield key


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
