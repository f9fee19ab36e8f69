"""SubmitPredictions: validate, dedupe by batch_id, give a sequence number, write ONCE to the stream.

One Redis: submit.lua does it all in one atomic step, one round trip (with the AOF state pipelined
behind it): recognise a retried batch_id (the earlier answer) or one used for other content, check
and register a new batch's group tags against the caps, reserve a per-model sequence number, add
the batch to the work stream and count it. A crash can leave nothing half done; a batch reserved by
an older gateway's first step (ingest.lua) is queued by the retry under its sequence number.
A cluster keeps the stream in another slot, so there the steps are separate (each single-slot):
groups.lua, ingest.lua, XADD, then mark_queued.lua counts it once; a crash between them re-adds the
batch on retry, which workers apply once. The answer goes out only after the batch is on the stream
and, with durability everysec on one Redis, after Redis wrote it to its AOF (gateway/durability.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
import redis.exceptions
from google.protobuf.message import DecodeError

from gateway import columns, wire_proof
from gateway.backlog import BacklogMonitor
from gateway.deployment import Deployment
from gateway.durability import AofBarrier, AofState
from gateway.evaluation_validation import evaluation_only, reads_evaluations
from gateway.quota import Quotas
from gateway.validation import validate
from holistic.errors import AlreadyExists, Backpressure, ConfigError, FieldViolation, InvalidArgument, Unavailable
from holistic.queue import envelope
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import shard_of
from holistic.redis.connection import RETRYABLE, pipelined
from holistic.redis.keys import Keys
from holistic.redis.scripts import Scripts
from holistic.settings import Settings
from holistic.tenancy.tenants import DEFAULT_TENANT, internal_model, split_model
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest, SubmitPredictionsResponse

if TYPE_CHECKING:
    from gateway.redaction import Redactor


def parse_request(raw: bytes) -> SubmitPredictionsRequest:
    try:
        return SubmitPredictionsRequest.FromString(raw)
    except DecodeError as exc:
        raise InvalidArgument(
            [FieldViolation("predictions", f"not a valid SubmitPredictionsRequest (bad protobuf or UTF-8): {exc}")]
        ) from exc


Tags = dict[str, dict[str, int]]


def group_tags(request: SubmitPredictionsRequest) -> Tags:
    """key -> value -> index of the first prediction carrying it, in order of appearance."""
    tags: Tags = {}
    for i, p in enumerate(request.predictions):
        if p.groups:
            for key, value in p.groups.items():
                tags.setdefault(key, {}).setdefault(value, i)
    return tags


def tags_of(pairs: list[tuple[str, str, int]]) -> Tags:
    """group_tags from the C proof's distinct pairs (already in order of first appearance)."""
    tags: Tags = {}
    for key, value, i in pairs:
        tags.setdefault(key, {})[value] = i
    return tags


IDLE_CLIENTS = 64  # pinned single-connection clients kept between submits (durability everysec)


class Incoming:
    """A SubmitPredictions request's bytes, parsed only where the C proof could not vouch for them
    (or where its canonical re-encoding or the walk's names are needed)."""

    def __init__(self, raw: bytes, proof: wire_proof.Proof | None, now: float) -> None:
        self.raw = raw
        self.proof = proof
        self.now = now
        self._request = None if proof is not None else parse_request(raw)

    @property
    def request(self) -> SubmitPredictionsRequest:
        if self._request is None:
            self._request = parse_request(self.raw)
        return self._request

    @property
    def batch_id(self) -> str:
        return self.proof.batch_id if self.proof is not None else self.request.batch_id

    @property
    def count(self) -> int:
        return self.proof.count if self.proof is not None else len(self.request.predictions)


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
        self._idle: list[aioredis.Redis] = []
        self.redactor: Redactor | None = None
        if settings.redact == "on":  # imported only then: Presidio brings spaCy, seconds to import
            try:
                from gateway.redaction import Redactor
            except ImportError as exc:
                raise ConfigError(
                    f"HOLISTIC_REDACT=on needs the redact extra: pip install 'holistic-eval[redact]' ({exc})"
                ) from exc
            self.redactor = Redactor(settings)

    def receive(self, raw: bytes) -> Incoming:
        """The request as received: proven from its bytes in C where it can be, else parsed (InvalidArgument
        on bytes that are not a SubmitPredictionsRequest)."""
        now = time.time()
        proof = wire_proof.prove(raw, self.settings, now) if self.settings.gateway_wire_proof else None
        return Incoming(raw, proof, now)

    async def submit(
        self, incoming: Incoming, *, tenant: str = DEFAULT_TENANT, traceparent: str = ""
    ) -> SubmitPredictionsResponse:
        raw, proof, now = incoming.raw, incoming.proof, incoming.now
        if proof is not None:
            public = proof.model
            # the content digest's bytes: the request's own where they are the canonical encoding already
            deterministic = raw if proof.canonical else incoming.request.SerializeToString(deterministic=True)
        else:
            request = incoming.request
            deterministic = request.SerializeToString(deterministic=True)
            public = columns.proven_model(request, raw, deterministic, self.settings, now) or validate(
                request, self.settings, now, len(raw)
            )
        model = internal_model(tenant, public)
        shard = shard_of(model, self.settings.queue_shards)
        families = await self.deployment.for_shard(shard)
        # evaluation-only predictions (a batch is all or none, validation.py) go to the families that read them
        if proof is None and evaluation_only(incoming.request.predictions[0]):
            families = tuple(f for f in families if reads_evaluations(f))
            if not families:
                raise Unavailable(
                    "no deployed metric family reads evaluations: deploy one that does (`holistic families add "
                    "evaluations`) before submitting evaluation-only predictions"
                )
        if not families:  # nobody would ever score it: refuse rather than accept and lose it
            raise Unavailable(
                "no metric family is deployed: start a worker (`holistic worker <family>`) or create the "
                "families' consumer groups (`holistic families add <family>`) before submitting"
            )
        try:
            # the digest is of the content as submitted: a retry is a duplicate whatever redaction makes of
            # it, and two batches that differ only in their PII are not the same batch
            digest = hashlib.sha256(deterministic).hexdigest()
            if self.redactor is not None:
                self._redact(incoming, self.redactor)
            return await self._submit(incoming, model, public, tenant, traceparent, families, digest)
        except redis.exceptions.OutOfMemoryError as exc:  # maxmemory (noeviction): nothing of this batch counted
            raise Backpressure(
                retry_after_s=MEMORY_RETRY_S,
                subject="redis-maxmemory",
                description="Redis is at its maxmemory; batches are accepted again once workers catch up",
                message=f"storage is full (Redis maxmemory); retry after {MEMORY_RETRY_S:g} s: {exc}",
            ) from exc

    @staticmethod
    def _redact(incoming: Incoming, redactor: Redactor) -> None:
        """Replace the batch's PII before any of it is written: the stream gets the redacted bytes."""
        request = incoming.request
        if redactor.request(request):
            incoming.raw = request.SerializeToString()

    async def _submit(
        self,
        incoming: Incoming,
        model: str,
        public: str,
        tenant: str,
        traceparent: str,
        families: tuple[str, ...],
        digest: str,
    ) -> SubmitPredictionsResponse:
        await self.quotas.admit(tenant, incoming.count)
        header = BatchEnvelope(
            batch_id=incoming.batch_id, model=model, families=families, traceparent=traceparent, tenant=tenant
        )
        if self.redactor is not None:
            header.redaction = self.redactor.tag
        if self.settings.redis_cluster:
            await self._check_model_cap(tenant, public, self.keys.ingest(model, incoming.batch_id))
            await self._register_groups(model, incoming, digest)  # only a new batch's tags count against the caps
            return await self._steps(incoming, model, public, tenant, digest, header)
        s, keys = self.settings, self.keys
        batch_id = incoming.batch_id
        stream = keys.stream_for(shard_of(model, s.queue_shards))
        base_keys = [keys.ingest(model, batch_id), keys.sequence(model), keys.meta(model), keys.models(tenant), stream]
        base_keys += [keys.models_index(tenant), keys.deleted(model), keys.deleting(model)]
        base_args: list[Any] = [digest, s.idempotency_ttl_s, int(incoming.now * 1000), incoming.count, public]
        base_args += [envelope.VERSION, model, ",".join(families), incoming.raw, header.SerializeToString()]
        base_args.append(s.tenant_max_models)
        exact = incoming.proof is None
        while True:
            tags = self._tags(incoming, exact)
            tag_keys, tag_args = self._tag_keys_args(model, tags) if tags else ([], [])
            reply, state = await self._run_submit(base_keys + tag_keys, base_args + tag_args)
            verdict = int(reply[0])
            if verdict < 3 or verdict >= 5 or exact:
                break
            exact = True  # nothing was written (a group cap): name the field as the walk would
        if verdict == 2:
            raise _reused(batch_id, int(reply[1]))
        if verdict == 5:
            raise self._too_many_models(tenant, public, int(reply[1]))
        if verdict == 6:
            raise _being_deleted(public)
        if verdict >= 3:
            raise self._over_cap(model, tags, reply[1], reply[2] if verdict == 4 else None)
        _, seq, count, accept_ms = (int(x) for x in reply)
        response = SubmitPredictionsResponse(
            batch_id=batch_id, model=public, sequence=seq, accepted_count=count, duplicate=verdict == 1
        )
        response.accept_time.FromMilliseconds(accept_ms)
        if state is not None:  # a duplicate waits too: the first attempt's writes may still be unwritten
            await self.barrier.wait(state)  # type: ignore[union-attr]
        return response

    async def _run_submit(self, keys: list[str], args: list[Any]) -> tuple[list[Any], AofState | None]:
        """submit.lua; with the AOF barrier, on a pinned connection with the AOF state behind it."""
        if self.barrier is None:
            return await self.scripts.submit(keys=keys, args=args), None
        for attempt in range(2):  # a connection that died with an earlier Redis is replaced once
            try:
                async with self._pinned_client() as c:
                    return await self._then_state(c, keys, args)
            except RETRYABLE:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    @contextlib.asynccontextmanager
    async def _pinned_client(self) -> AsyncIterator[aioredis.Redis]:
        """A client on one connection that never retries, kept for the next submit when this one ended
        normally (building one costs more than a round trip); on a connection error every kept one is
        dropped, as they may all hold sockets of a Redis that is gone."""
        c = self._idle.pop() if self._idle else await self.pinned.client().initialize()
        ended = False
        try:
            yield c
            ended = True
        except RETRYABLE:
            idle, self._idle = self._idle, []
            for other in idle:
                await other.aclose()
            raise
        finally:
            if ended and len(self._idle) < IDLE_CLIENTS:
                self._idle.append(c)
            else:  # an error or a cancel may leave a reply unread on the connection: never reuse it
                await c.aclose()

    async def _then_state(self, c: aioredis.Redis, keys: list[str], args: list[Any]) -> tuple[list[Any], AofState]:
        """submit.lua, then the AOF state, sent together on the pinned connection (in order: the state
        is read after the batch's writes, which tells the barrier which Redis process holds them and where)."""
        submit, aof_state = self.scripts.submit, self.scripts.aof_state
        for attempt in range(2):
            reply, state = await pipelined(
                c, ("EVALSHA", submit.sha, len(keys), *keys, *args), ("EVALSHA", aof_state.sha, 0)
            )
            missing = [x for x in (reply, state) if isinstance(x, redis.exceptions.NoScriptError)]
            if missing and not attempt:  # a restarted Redis forgot the scripts: load them, send again
                for script in (submit, aof_state):
                    await c.script_load(script.script)
                continue
            for answer in (reply, state):
                if isinstance(answer, Exception):
                    raise answer
            return reply, AofState.of(state)
        raise AssertionError("unreachable")

    async def _steps(
        self, incoming: Incoming, model: str, public: str, tenant: str, digest: str, header: BatchEnvelope
    ) -> SubmitPredictionsResponse:
        """A cluster keeps the stream in another slot than the batch's keys: reserve (ingest.lua), XADD,
        then count once (mark_queued.lua); a crash between them re-adds the batch on retry, which
        workers apply once."""
        batch_id = incoming.batch_id
        ingest_key = self.keys.ingest(model, batch_id)
        reply = await self.scripts.ingest(
            keys=[ingest_key, self.keys.sequence(model), self.keys.deleted(model), self.keys.deleting(model)],
            args=[digest, self.settings.idempotency_ttl_s, int(incoming.now * 1000), incoming.count],
        )
        if int(reply[0]) < 0:
            raise _being_deleted(public)
        is_new, seq, stored, state, count, accept_ms = reply
        stored = stored.decode() if isinstance(stored, bytes) else stored
        state = state.decode() if isinstance(state, bytes) else state
        if not is_new and stored != digest:
            raise _reused(batch_id, seq)
        response = SubmitPredictionsResponse(
            batch_id=batch_id, model=public, sequence=seq, accepted_count=count, duplicate=not is_new
        )
        response.accept_time.FromMilliseconds(int(accept_ms))
        if state != "queued":
            header.sequence = seq
            header.accept_time.FromMilliseconds(int(accept_ms))
            stream = self.keys.stream_for(shard_of(model, self.settings.queue_shards))
            entry_id = await self.r.xadd(stream, envelope.fields_for(model, seq, incoming.raw, header))  # type: ignore[arg-type]
            counted = await self.scripts.mark_queued(
                keys=[ingest_key, self.keys.meta(model)], args=["", ",".join(header.families)]
            )
            if int(counted) < 0:  # the model was deleted since ingest.lua numbered the batch
                await self.r.xdel(stream, entry_id)
                raise _being_deleted(public)
        # On every answer, a retry's too: a crash after mark_queued must not leave the model unlisted.
        await self.r.sadd(self.keys.models(tenant), public)  # type: ignore[misc]
        await self.r.zadd(self.keys.models_index(tenant), {public: 0})
        return response

    @staticmethod
    def _tags(incoming: Incoming, exact: bool) -> Tags:
        """The batch's group tags: from the C proof (wire order), or the request's own order (exact),
        which decides what is named past a cap."""
        if exact or incoming.proof is None:
            return group_tags(incoming.request)
        return tags_of(incoming.proof.pairs)

    def _tag_keys_args(self, model: str, tags: Tags) -> tuple[list[str], list[Any]]:
        """group_caps.lua's keys (the model's set of group keys, then one set of values per key) and
        arguments (the caps, then per key: name, value count, values)."""
        s = self.settings
        keys = [self.keys.group_keys(model), *(self.keys.group_values(model, k) for k in tags)]
        args: list[Any] = [s.max_group_keys, s.max_group_values]
        for key, values in tags.items():
            args += [key, len(values), *values]
        return keys, args

    async def _register_groups(self, model: str, incoming: Incoming, digest: str, exact: bool = False) -> None:
        """A cluster's first step (groups.lua): cap the distinct group keys and values per model
        (HOLISTIC_MAX_GROUP_KEYS/_VALUES), so the fairness statistics stay bounded; a batch past a cap
        is refused whole, naming the field. A batch_id seen before registers nothing: a retry (its tags
        counted when it was new) passes, other content under it is AlreadyExists."""
        exact = exact or incoming.proof is None
        tags = self._tags(incoming, exact)
        if not tags:
            return
        tag_keys, tag_args = self._tag_keys_args(model, tags)
        reply = await self.scripts.groups(
            keys=[self.keys.ingest(model, incoming.batch_id), self.keys.deleting(model), *tag_keys],
            args=[digest, *tag_args],
        )
        verdict = int(reply[0])
        if verdict in (0, 3):  # registered, or a retry
            return
        if verdict == 5:
            raise _being_deleted(split_model(model)[1])
        if verdict == 4:
            raise _reused(incoming.batch_id, int(reply[1]))
        if not exact:  # nothing was registered (the script is all or nothing): name it as the walk would
            return await self._register_groups(model, incoming, digest, exact=True)
        raise self._over_cap(model, tags, reply[1], reply[2] if verdict == 2 else None)

    async def _check_model_cap(self, tenant: str, public: str, ingest_key: str) -> None:
        """A cluster's model cap, before any step writes: the tenant's set and the batch's keys live in
        other slots, so unlike submit.lua this check is not atomic with the SADD, and gateways racing
        to add new models may pass the cap by as many as race. A known batch_id is never refused."""
        pipe = self.r.pipeline(transaction=False)
        pipe.scard(self.keys.models(tenant))
        pipe.sismember(self.keys.models(tenant), public)
        pipe.exists(ingest_key)
        count, member, known = await pipe.execute()
        if int(count) >= self.settings.tenant_max_models and not member and not known:
            raise self._too_many_models(tenant, public, int(count))

    def _too_many_models(self, tenant: str, public: str, count: int) -> InvalidArgument:
        cap = self.settings.tenant_max_models
        why = f"{public!r} would be model number {count + 1} of tenant {tenant!r}; at most {cap} "
        why += "(HOLISTIC_TENANT_MAX_MODELS): send to a model the tenant has, or ask for a higher cap"
        return InvalidArgument([FieldViolation("model", why)])

    def _over_cap(self, model: str, tags: Tags, raw_key: bytes | str, raw_value: bytes | str | None) -> InvalidArgument:
        """The refusal of a batch whose group key (value None) or value would pass its cap."""
        s = self.settings
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        if raw_value is None:
            i = min(tags[key].values())
            why = f"would be group key number {s.max_group_keys + 1} of model {model!r}; at most "
            why += f"{s.max_group_keys} distinct keys (HOLISTIC_MAX_GROUP_KEYS)"
        else:
            value = raw_value.decode() if isinstance(raw_value, bytes) else raw_value
            i = tags[key][value]
            why = f"value {value!r} would be distinct value number {s.max_group_values + 1} of group key "
            why += f"{key!r} for model {model!r}; at most {s.max_group_values} (HOLISTIC_MAX_GROUP_VALUES)"
        return InvalidArgument([FieldViolation(f"predictions[{i}].groups[{key!r}]", why)])


def _being_deleted(public: str) -> Unavailable:
    return Unavailable(f"model {public!r} is being deleted; retry once the deletion has ended (seconds)")


def _reused(batch_id: str, seq: int) -> AlreadyExists:
    return AlreadyExists(f"batch_id {batch_id!r} was used for other content (sequence {seq}); use a new batch_id")
