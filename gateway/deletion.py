"""DeleteModel: every key of a model removed, and its batches taken off the work and dead-letter streams.

In order: the model's keys (a SCAN of its hash tag, each key counted under its key family of
holistic/stored.py), its batches' entries on its shard of the work stream and on that shard's dead
letters (XDEL, found by the entries' `m` field), then its name in the tenant's model set and index (the
set first: ListModels re-indexes the names of the set that its index lacks). The answer counts what was
removed per key family, in the storage reference's order; a second deletion finds nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis

from holistic.keys import Keys, glob_escape
from holistic.settings import Settings
from holistic.stored import INVENTORY, Inventory, Stored
from holistic.tenants import internal_model
from holistic.v1 import evaluation_service_pb2 as es
from holistic.workqueue import shard_of

log = logging.getLogger("holistic.gateway")

SCAN_COUNT = 1000  # keys a SCAN step looks at
CHUNK = 500  # keys unlinked, or stream entries read, a round trip


class Deleter:
    def __init__(self, r: aioredis.Redis, settings: Settings) -> None:
        self.r = r
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.inventory = Inventory(self.keys)

    def _row(self, builder: str, *args: str) -> Stored:
        return next(row for row in INVENTORY if row.builder == builder and (not args or row.args == args))

    async def model(self, tenant: str, public: str) -> list[es.RemovedKeys]:
        """Delete the tenant's model `public`; what was removed, per key family."""
        model = internal_model(tenant, public)
        removed: Counter[Stored] = Counter()
        await self._unlink(self._scan(self.keys.model_keys_glob(glob_escape(model))), removed)
        shard = shard_of(model, self.settings.queue_shards)
        await self._entries(self.keys.stream_for(shard), {model}, self._row("stream_for"), removed)
        await self._entries(self.keys.dead_letters_for(shard), {model}, self._row("dead_letters_for"), removed)
        await self._names(tenant, [public], removed)
        return self._report(removed)

    async def _scan(self, glob: str) -> Any:
        async for raw in self.r.scan_iter(match=glob, count=SCAN_COUNT):
            yield raw.decode() if isinstance(raw, bytes) else raw

    async def _unlink(self, keys: Any, removed: Counter[Stored]) -> None:
        """UNLINK the keys (an async iterable), a chunk a round trip, counting each one removed under its row."""
        chunk: list[str] = []
        async for key in keys:
            chunk.append(key)
            if len(chunk) >= CHUNK:
                await self._unlink_chunk(chunk, removed)
                chunk = []
        if chunk:
            await self._unlink_chunk(chunk, removed)

    async def _unlink_chunk(self, chunk: list[str], removed: Counter[Stored]) -> None:
        pipe = self.r.pipeline(transaction=False)
        for key in chunk:
            pipe.unlink(key)
        for key, gone in zip(chunk, await pipe.execute(), strict=True):
            row = self.inventory.describe(key)
            if gone and row is not None:
                removed[row] += int(gone)
            elif gone:
                log.warning("deleted a key no row of holistic/stored.py describes: %s", key)

    async def _entries(self, stream: str, models: set[str], row: Stored, removed: Counter[Stored]) -> None:
        """XDEL the stream's entries of the models (their `m` field), read a page at a time."""
        wanted = {m.encode() for m in models}
        start = "-"
        while True:
            page = await self.r.xrange(stream, min=start, max="+", count=CHUNK)
            ids = [eid for eid, fields in page if fields.get(b"m") in wanted]
            if ids:
                removed[row] += int(await self.r.xdel(stream, *ids))
            if len(page) < CHUNK:
                return
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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
