"""SubmitPredictions: validate, dedupe by batch_id, give a sequence number, write ONCE to the stream.

Cluster-safe in three steps (each single-slot): ingest.lua reserves a per-model sequence number
(or returns the earlier answer); XADD writes the batch; mark_queued.lua counts it once. A crash
between the steps leaves the reservation, and the client's retry re-adds the batch with the same
sequence number, which workers apply once. The answer goes out only after XADD returned and, with
durability everysec on one Redis, after Redis wrote the steps to its AOF (gateway/durability.py).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from google.protobuf.message import DecodeError

from gateway import columns
from gateway.backlog import BacklogMonitor
from gateway.deployment import Deployment
from gateway.durability import AofBarrier
from gateway.quota import Quotas
from gateway.validation import validate
from holistic import envelope
from holistic.errors import AlreadyExists, Backpressure, FieldViolation, InvalidArgument, Unavailable
from holistic.keys import Keys
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.redis_conn import RETRYABLE
from holistic.scripts import Scripts
from holistic.settings import Settings
from holistic.tenants import DEFAULT_TENANT, internal_model
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest, SubmitPredictionsResponse
from holistic.workqueue import shard_of


def parse_request(raw: bytes) -> SubmitPredictionsRequest:
    try:
        return SubmitPredictionsRequest.FromString(raw)
    except DecodeError as exc:
        raise InvalidArgument(
            [FieldViolation("predictions", f"not a valid SubmitPredictionsRequest (bad protobuf or UTF-8): {exc}")]
        ) from exc


def group_tags(request: SubmitPredictionsRequest) -> dict[str, dict[str, int]]:
    """key -> value -> index of the first prediction carrying it, in order of appearance."""
    tags: dict[str, dict[str, int]] = {}
    for i, p in enumerate(request.predictions):
        if p.groups:
            for key, value in p.groups.items():
                tags.setdefault(key, {}).setdefault(value, i)
    return tags


MEMORY_RETRY_S = 2.0  # Redis full: workers apply and the janitor trims; memory frees within seconds


class Ingestor:
    def __init__(
        self,
        r: aioredis.Redis,
        settings: Settings,
        backlog: BacklogMonitor,
        quotas: Quotas,
        deployment: Deployment,
        barrier: AofBarrier | None = None,
        pinned: aioredis.Redis | None = None,
    ) -> None:
        """barrier and pinned (a pool whose clients never retry, so a submit's writes cannot straddle two
        Redis processes) come together: durability everysec on one Redis."""
        self.r = r
        self.barrier = barrier
        self.pinned = pinned if pinned is not None else r
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.scripts = Scripts(r)
        self.backlog = backlog
        self.quotas = quotas
        self.deployment = deployment

    async def submit(
        self, raw: bytes, request: SubmitPredictionsRequest, *, tenant: str = DEFAULT_TENANT, traceparent: str = ""
    ) -> SubmitPredictionsResponse:
        now = time.time()
        deterministic = request.SerializeToString(deterministic=True)  # the content digest's bytes
        public = columns.proven_model(request, raw, deterministic, self.settings, now) or validate(
            request, self.settings, now, len(raw)
        )
        model = internal_model(tenant, public)
        shard = shard_of(model, self.settings.queue_shards)
        families = await self.deployment.for_shard(shard)
        if not families:  # nobody would ever score it: refuse rather than accept and lose it
            raise Unavailable(
                "no metric family is deployed: start a worker (`holistic worker <family>`) or create the "
                "families' consumer groups (`holistic families add <family>`) before submitting"
            )
        try:
            digest = hashlib.sha256(deterministic).hexdigest()
            return await self._submit(raw, request, model, public, tenant, traceparent, now, families, digest)
        except redis.exceptions.OutOfMemoryError as exc:  # maxmemory (noeviction): nothing of this batch counted
            raise Backpressure(
                retry_after_s=MEMORY_RETRY_S,
                subject="redis-maxmemory",
                description="Redis is at its maxmemory; batches are accepted again once workers catch up",
                message=f"storage is full (Redis maxmemory); retry after {MEMORY_RETRY_S:g} s: {exc}",
            ) from exc

    async def _submit(
        self,
        raw: bytes,
        request: SubmitPredictionsRequest,
        model: str,
        public: str,
        tenant: str,
        traceparent: str,
        now: float,
        families: tuple[str, ...],
        digest: str,
    ) -> SubmitPredictionsResponse:
        n = len(request.predictions)
        await self.quotas.admit(tenant, n)
        if not await self._known(model, request.batch_id, digest):
            await self._register_groups(model, request)  # only a new batch's tags count against the caps
        if self.barrier is None:
            stored = await self._store(self.r, request, raw, model, public, tenant, traceparent, digest, now, families)
            return stored[0]
        for attempt in range(2):  # a connection that died with an earlier Redis is replaced once
            try:
                async with self.pinned.client() as c:
                    response, info = await self._store(
                        c, request, raw, model, public, tenant, traceparent, digest, now, families
                    )
                break
            except RETRYABLE:
                if attempt:
                    raise
        await self.barrier.wait(info)
        return response

    async def _store(
        self,
        c: aioredis.Redis,
        request: SubmitPredictionsRequest,
        raw: bytes,
        model: str,
        public: str,
        tenant: str,
        traceparent: str,
        digest: str,
        now: float,
        families: tuple[str, ...],
    ) -> tuple[SubmitPredictionsResponse, dict[str, Any] | None]:
        """Reserve, write, count; with the AOF barrier, on one connection and so one Redis process,
        ending with the INFO that tells the barrier which process holds the writes and where."""
        ingest_key = self.keys.ingest(model, request.batch_id)
        is_new, seq, stored, state, count, accept_ms = await self.scripts.ingest(
            keys=[ingest_key, self.keys.sequence(model)],
            args=[digest, self.settings.idempotency_ttl_s, int(now * 1000), len(request.predictions)],
            client=c,
        )
        stored = stored.decode() if isinstance(stored, bytes) else stored
        state = state.decode() if isinstance(state, bytes) else state
        if not is_new and stored != digest:
            raise _reused(request.batch_id, seq)
        response = SubmitPredictionsResponse(
            batch_id=request.batch_id, model=public, sequence=seq, accepted_count=count, duplicate=not is_new
        )
        response.accept_time.FromMilliseconds(int(accept_ms))
        if state != "queued":
            header = BatchEnvelope(
                batch_id=request.batch_id,
                model=model,
                sequence=seq,
                families=families,
                traceparent=traceparent,
                tenant=tenant,
            )
            header.accept_time.FromMilliseconds(int(accept_ms))
            stream = self.keys.stream_for(shard_of(model, self.settings.queue_shards))
            await c.xadd(stream, envelope.fields_for(model, seq, raw, header))  # type: ignore[arg-type]
            if self.settings.redis_cluster:
                await self.scripts.mark_queued(keys=[ingest_key, self.keys.meta(model)], client=c)
                await c.sadd(self.keys.models(tenant), public)  # type: ignore[misc]
            else:
                keys = [ingest_key, self.keys.meta(model), self.keys.models(tenant)]
                await self.scripts.mark_queued(keys=keys, args=[public], client=c)
        # a duplicate waits too: the first attempt's writes may still be unwritten
        info = await c.info("server", "persistence") if self.barrier is not None else None
        return response, info

    async def _known(self, model: str, batch_id: str, digest: str) -> bool:
        """Whether batch_id was seen with this content (a retry: its groups are registered already);
        AlreadyExists when it was seen with other content, before any tag is registered."""
        seq, stored = await self.r.hmget(self.keys.ingest(model, batch_id), "seq", "hash")  # type: ignore[misc]
        if stored is None:
            return False
        if (stored.decode() if isinstance(stored, bytes) else stored) != digest:
            raise _reused(batch_id, int(seq))
        return True

    async def _register_groups(self, model: str, request: SubmitPredictionsRequest) -> None:
        """Cap the distinct group keys and values per model (HOLISTIC_MAX_GROUP_KEYS/_VALUES), so the
        fairness statistics stay bounded; a batch past a cap is refused whole, naming the field."""
        tags = group_tags(request)
        if not tags:
            return
        s = self.settings
        args: list[str | int] = [s.max_group_keys, s.max_group_values]
        for key, values in tags.items():
            args += [key, len(values), *values]
        keys = [self.keys.group_keys(model)] + [self.keys.group_values(model, k) for k in tags]
        reply = await self.scripts.groups(keys=keys, args=args)
        if int(reply[0]) == 0:
            return
        key = reply[1].decode() if isinstance(reply[1], bytes) else reply[1]
        if int(reply[0]) == 1:
            i = min(tags[key].values())
            why = f"would be group key number {s.max_group_keys + 1} of model {model!r}; at most "
            why += f"{s.max_group_keys} distinct keys (HOLISTIC_MAX_GROUP_KEYS)"
        else:
            value = reply[2].decode() if isinstance(reply[2], bytes) else reply[2]
            i = tags[key][value]
            why = f"value {value!r} would be distinct value number {s.max_group_values + 1} of group key "
            why += f"{key!r} for model {model!r}; at most {s.max_group_values} (HOLISTIC_MAX_GROUP_VALUES)"
        raise InvalidArgument([FieldViolation(f"predictions[{i}].groups[{key!r}]", why)])


def _reused(batch_id: str, seq: int) -> AlreadyExists:
    return AlreadyExists(f"batch_id {batch_id!r} was used for other content (sequence {seq}); use a new batch_id")
