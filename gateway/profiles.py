"""Reads a model's statistics over a window from Redis and folds them into a Profile."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis

from gateway.deployment import Deployment
from gateway.model_pages import Page, encode_token, page_of
from gateway.read_limits import ReadLimits
from gateway.retention_notice import notice
from holistic.errors import FieldViolation, InvalidArgument, NotFound
from holistic.families import Family
from holistic.profile import fold as profile_mod
from holistic.profile import pending as pending_mod
from holistic.profile import windows
from holistic.redis.connection import RETRYABLE, set_chunks
from holistic.redis.keys import Keys
from holistic.settings import Settings
from holistic.stats.mergeable import Folded
from holistic.tenancy.retention import Retention, RetentionStore, defaults
from holistic.tenancy.tenants import DEFAULT_TENANT, internal_model
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import profile_pb2 as pp

MIN_TIMESTAMP_S, MAX_TIMESTAMP_S = -62_135_596_800, 253_402_300_799  # 0001-01-01 .. 9999-12-31 (protobuf)

T = TypeVar("T")
log = logging.getLogger("holistic.gateway")
READ_RETRY_S = 5.0  # a read retries on fresh connections this long while Redis restarts or fails over
PIPELINE_CHUNK = 64  # HGETALLs per round trip: one read never holds Redis or the event loop for long
# A model's summary (its meta hash) holds 4-5 fields, a statistics bucket tens to hundreds: ten summaries
# are charged to the tenant's read budget as one bucket.
LIST_MODELS_PER_BUCKET = 10
INDEX_CHUNK = 1000  # names a round trip when indexing a tenant's models for ListModels's pages

PRESET_NAMES = {
    pp.WINDOW_PRESET_UNSPECIFIED: "all_time",
    pp.WINDOW_PRESET_ALL_TIME: "all_time",
    pp.WINDOW_PRESET_LAST_15_MINUTES: "last_15_minutes",
    pp.WINDOW_PRESET_LAST_HOUR: "last_hour",
    pp.WINDOW_PRESET_LAST_DAY: "last_day",
    pp.WINDOW_PRESET_LAST_WEEK: "last_week",
}


@dataclass(frozen=True)
class WindowSpec:
    """What the client asked for: a preset, or an explicit [start, end) in epoch seconds."""

    preset: int = pp.WINDOW_PRESET_ALL_TIME
    start_s: float | None = None
    end_s: float | None = None
    range_ns: tuple[int, int] | None = None  # the explicit range exactly as asked, in epoch nanoseconds

    @classmethod
    def from_request(cls, request: object) -> WindowSpec:
        which = request.WhichOneof("window")  # type: ignore[attr-defined]
        if which == "range":
            r = request.range  # type: ignore[attr-defined]
            if not r.HasField("start_time") or not r.HasField("end_time"):
                raise InvalidArgument([FieldViolation("range", "needs both start_time and end_time")])
            for name in ("start_time", "end_time"):
                t = getattr(r, name)
                if not (MIN_TIMESTAMP_S <= t.seconds <= MAX_TIMESTAMP_S and 0 <= t.nanos < 1_000_000_000):
                    raise InvalidArgument([FieldViolation(f"range.{name}", "is not a valid timestamp")])
            start = r.start_time.seconds + r.start_time.nanos * 1e-9
            end = r.end_time.seconds + r.end_time.nanos * 1e-9
            if end <= start:
                raise InvalidArgument([FieldViolation("range.end_time", "must be after start_time")])
            exact = (r.start_time.ToNanoseconds(), r.end_time.ToNanoseconds())
            return cls(pp.WINDOW_PRESET_UNSPECIFIED, start, end, exact)
        preset = request.preset if which == "preset" else pp.WINDOW_PRESET_ALL_TIME  # type: ignore[attr-defined]
        if preset not in PRESET_NAMES:
            raise InvalidArgument([FieldViolation("preset", f"unknown window preset {preset}")])
        return cls(preset or pp.WINDOW_PRESET_ALL_TIME)

    def resolve(self, now_s: float, settings: Settings, retention: Retention | None = None) -> windows.Resolved:
        """Bounded whatever was asked: INVALID_ARGUMENT past HOLISTIC_MAX_WINDOW_BUCKETS, before any read.
        retention: the tenant's (default: the global settings'); buckets past it are never read."""
        kept = retention or defaults(settings)
        tiers = (kept.minute_s, kept.hour_s)
        latest = now_s + settings.future_skew_s
        if self.start_s is not None and self.end_s is not None:
            resolved = windows.resolve(self.start_s, self.end_s, now_s, *tiers, latest, kept.day_s)
        else:
            resolved = windows.resolve_preset(PRESET_NAMES[self.preset], now_s, *tiers, latest, kept.day_s)
        if len(resolved.buckets) > settings.max_window_buckets:
            raise InvalidArgument(
                [
                    FieldViolation(
                        "range",
                        f"resolves to {len(resolved.buckets)} buckets per family; at most "
                        f"{settings.max_window_buckets} (HOLISTIC_MAX_WINDOW_BUCKETS): narrow the range",
                    )
                ]
            )
        return resolved


def window_message(spec: WindowSpec, resolved: windows.Resolved, retention_notice: str = "") -> pp.Window:
    w = pp.Window(
        preset=spec.preset,
        resolution_seconds=resolved.resolution_s,
        start_resolution_seconds=resolved.start_grid_s,
        end_resolution_seconds=resolved.end_grid_s,
        retention_notice=retention_notice,
    )
    if not resolved.all_time:
        w.range.start_time.FromSeconds(int(resolved.start_s))  # type: ignore[arg-type]
        w.range.end_time.FromSeconds(int(resolved.end_s))  # type: ignore[arg-type]
        start_ns, end_ns = spec.range_ns or (
            round(resolved.requested_start_s * 1e9),  # type: ignore[operator]
            round(resolved.requested_end_s * 1e9),  # type: ignore[operator]
        )
        w.requested_range.start_time.FromNanoseconds(start_ns)
        w.requested_range.end_time.FromNanoseconds(end_ns)
    return w


class ProfileReader:
    """Profile reads: the window is bounded and the model known before any statistics are read; the
    fold runs on a thread pool, so a heavy read does not hold the event loop that answers others."""

    def __init__(
        self,
        r: aioredis.Redis,
        settings: Settings,
        folds: Executor | None = None,
        limits: ReadLimits | None = None,
        deployment: Deployment | None = None,
        families: Callable[[str], Family] | None = None,
    ) -> None:
        """deployment: the deployed families (default: read from the consumer groups); families: finds a
        family's declaration and fold by name (default: the installed entry points)."""
        self.r = r  # the reads' own pool: a flood of reads waits here, never on the connections of submits
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.deployment = deployment or Deployment(r, self.keys, settings.queue_shards)
        self.families = families
        self.folds = folds
        self.retention = RetentionStore(settings)
        self._indexing: dict[str, asyncio.Lock] = {}  # per tenant: one indexing of its models at a time
        self.limits = limits or ReadLimits(
            settings.tenant_concurrent_reads,
            settings.tenant_max_watches,
            settings.max_watches,
            settings.tenant_read_buckets_per_s,
        )

    async def exists(self, model: str, tenant: str = DEFAULT_TENANT) -> bool:
        return bool(await self.r.sismember(self.keys.models(tenant), model))

    async def profile(
        self, public: str, spec: WindowSpec, tenant: str = DEFAULT_TENANT, queue: bool = False
    ) -> pp.Profile:
        """The profile of the tenant's model `public`; NotFound for a model the tenant never sent.
        queue: wait for one of the tenant's read slots rather than be refused when many wait."""
        # refuses an over-long window before any wait
        resolved = spec.resolve(time.time(), self.settings, self.retention.of(tenant))
        cost = len(resolved.buckets) * len(await self.deployment.families()) + 1
        async with self.limits.read(tenant, queue, cost):
            if not await retrying(lambda: self.exists(public, tenant)):
                raise NotFound(f"no predictions were ever accepted for model {public!r}")
            profile, _ = await retrying(lambda: self._read(public, spec, tenant))
            return profile

    async def stored(self, public: str, spec: WindowSpec, tenant: str = DEFAULT_TENANT) -> tuple[pp.Profile, Stored]:
        """The profile, and each bucket's statistics it was folded from (CompareProfiles's bootstrap),
        bounded and charged as a profile read."""
        resolved = spec.resolve(time.time(), self.settings)
        cost = len(resolved.buckets) * len(await self.deployment.families()) + 1
        async with self.limits.read(tenant, False, cost):
            if not await retrying(lambda: self.exists(public, tenant)):
                raise NotFound(f"no predictions were ever accepted for model {public!r}")
            profile, stored = await retrying(lambda: self._read(public, spec, tenant, keep=True))
            assert stored is not None
            return profile, stored

    async def _read(
        self, public: str, spec: WindowSpec, tenant: str, keep: bool = False
    ) -> tuple[pp.Profile, Stored | None]:
        """The folded profile, and with keep, what it was folded from."""
        model = internal_model(tenant, public)
        now = time.time()
        retention = self.retention.of(tenant)
        resolved = spec.resolve(now, self.settings, retention)
        families = await self.deployment.families()
        keys: list[str] = []
        for fam in families:  # per family: its recorded signatures, then its buckets
            keys.append(self.keys.signatures(model, fam))
            keys += [self.keys.stats(model, fam, tier, bucket) for tier, bucket in resolved.buckets]
        replies: list[Any] = [await self.r.hgetall(self.keys.meta(model))]  # type: ignore[misc]
        replies += await self._hgetall_each(keys)
        window = window_message(spec, resolved, notice(retention, resolved, now))
        loop = asyncio.get_running_loop()
        profile = await loop.run_in_executor(
            self.folds,
            _fold,
            model,
            window,
            replies,
            families,
            len(resolved.buckets),
            self.settings,
            now,
            self.families,
        )
        profile.model = public
        sig_ids = [list(replies[1 + i * (1 + len(resolved.buckets))]) for i in range(len(families))]
        meta = {k.decode(): float(v) for k, v in replies[0].items()}
        pending_mod.mark_pending(profile, await self._pending(model, families, sig_ids, meta))
        if not keep:
            return profile, None
        stored = await loop.run_in_executor(
            self.folds, Stored.of, model, window, replies, families, len(resolved.buckets), now, resolved
        )
        return profile, stored

    async def _pending(
        self, model: str, families: list[str], sig_ids: list[list[bytes]], meta: dict[str, float]
    ) -> list[pp.FamilyPending]:
        """Per family, accepted minus applied (holistic/profile/pending.py): one pipeline, two commands a
        family (BITCOUNT of its done bitmap, HMGET of its signature counts), whatever the model's size."""
        pipe = self.r.pipeline(transaction=False)
        for fam, ids in zip(families, sig_ids, strict=True):
            pipe.bitcount(self.keys.done(model, fam))
            fields = pending_mod.signature_fields(i.decode() for i in ids)
            if fields:
                pipe.hmget(self.keys.stats(model, fam, "all"), fields)
        replies = iter(await pipe.execute())
        out = []
        for fam, ids in zip(families, sig_ids, strict=True):
            batches = int(next(replies))
            counts = next(replies) if ids else []
            out.append(pending_mod.family_pending(fam, meta, batches, counts))
        return out

    async def _hgetall_each(self, keys: list[str]) -> list[Any]:
        """HGETALL of every key, PIPELINE_CHUNK a round trip: short turns for Redis and this event loop."""
        replies: list[Any] = []
        for i in range(0, len(keys), PIPELINE_CHUNK):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[i : i + PIPELINE_CHUNK]:
                pipe.hgetall(key)
            replies += await pipe.execute()
        return replies

    async def list_models(
        self, tenant: str = DEFAULT_TENANT, page_size: int = 0, page_token: str = ""
    ) -> es.ListModelsResponse:
        """One page of the tenant's models in name order (gateway/model_pages.py), bounded before any
        summary is read: at most HOLISTIC_MAX_LIST_MODELS, and the read takes one of the tenant's read
        slots and is charged to its read budget, LIST_MODELS_PER_BUCKET models a bucket."""
        page = page_of(page_size, page_token, self.settings.max_list_models)
        indexed, total = await retrying(lambda: self._counts(tenant))
        async with self.limits.read(tenant, cost=1 + min(page.size, total) // LIST_MODELS_PER_BUCKET):
            if indexed < total:
                await retrying(lambda: self._index(tenant))
            response = await retrying(lambda: self._list_models(tenant, page))
        response.total_size = total
        return response

    async def first_models(self, tenant: str, n: int) -> tuple[list[str], int]:
        """The first `n` names of the tenant's models in name order, and how many it has (the quality
        exporter's "*"): not charged to the tenant, as no caller of the tenant asked for it."""
        indexed, total = await self._counts(tenant)
        if indexed < total:
            await self._index(tenant)
        names = await self.r.zrange(self.keys.models_index(tenant), 0, n - 1)
        return [name.decode() for name in names], total

    async def _counts(self, tenant: str) -> tuple[int, int]:
        """Names in the tenant's model index, and in its model set (both O(1))."""
        pipe = self.r.pipeline(transaction=False)
        pipe.zcard(self.keys.models_index(tenant))
        pipe.scard(self.keys.models(tenant))
        indexed, total = await pipe.execute()
        return int(indexed), int(total)

    async def _index(self, tenant: str) -> None:
        """Add to the tenant's model index the names of its model set that it lacks: those accepted by
        gateways from before the index (once per tenant), or by a cluster gateway that died between its
        SADD and its ZADD. Every submit writes both; a deletion (gateway/deletion.py) removes a name from
        the set, then from the index. One indexing a tenant at a time in this process; a second caller
        finds it done."""
        async with self._indexing.setdefault(tenant, asyncio.Lock()):
            indexed, total = await self._counts(tenant)
            if indexed >= total:
                return
            async for chunk in set_chunks(self.r, self.keys.models(tenant), INDEX_CHUNK):
                await self.r.zadd(self.keys.models_index(tenant), dict.fromkeys(chunk, 0))
            log.info("indexed the %d models of tenant %r for ListModels's pages", total, tenant)

    async def _list_models(self, tenant: str, page: Page) -> es.ListModelsResponse:
        start = b"-" if page.after is None else b"(" + page.after
        names: list[bytes] = await self.r.zrange(
            self.keys.models_index(tenant), start, b"+", bylex=True, offset=0, num=page.size + 1
        )
        more, names = len(names) > page.size, names[: page.size]
        models = [n.decode() for n in names]
        replies = await self._hgetall_each([self.keys.meta(internal_model(tenant, m)) for m in models])
        out = es.ListModelsResponse(next_page_token=encode_token(names[-1]) if more else "")
        for model, raw in zip(models, replies, strict=True):
            meta = {k.decode(): int(v) for k, v in raw.items()}
            s = out.models.add(
                model=model,
                accepted_predictions=meta.get("accepted_predictions", 0),
                accepted_batches=meta.get("accepted_batches", 0),
            )
            if "first_accept_ms" in meta:
                s.first_accept_time.FromMilliseconds(meta["first_accept_ms"])
                s.last_accept_time.FromMilliseconds(meta.get("last_accept_ms", meta["first_accept_ms"]))
        return out


@dataclass
class Stored:
    """What a profile was folded from: per family, each bucket's statistics apart, so that a merge of any
    draw of them can be folded again (holistic/compare/bootstrap.py)."""

    model: str  # the internal name
    window: pp.Window
    meta: dict[str, float]
    buckets: dict[str, list[Folded]]
    signatures: dict[str, dict[str, bytes]]
    now: float
    resolved: windows.Resolved

    @classmethod
    def of(
        cls, model: str, window: pp.Window, replies: list[Any], families: list[str], buckets: int, now: float,
        resolved: windows.Resolved,
    ) -> Stored:  # fmt: skip
        rest, per = replies[1:], 1 + buckets
        by_family: dict[str, list[Folded]] = {}
        signatures: dict[str, dict[str, bytes]] = {}
        for i, fam in enumerate(families):
            sigs, *hashes = rest[i * per : (i + 1) * per]
            by_family[fam] = [Folded.from_hashes([h]) for h in hashes]
            signatures[fam] = {k.decode(): v for k, v in sigs.items()}
        meta = {k.decode(): float(v) for k, v in replies[0].items()}
        return cls(model, window, meta, by_family, signatures, now, resolved)

    def fold(self, folded: dict[str, Folded], settings: Settings, loader: Callable[[str], Family] | None) -> pp.Profile:
        """The profile of these families' statistics (a bootstrap draw's), the others left out."""
        sigs = {f: self.signatures[f] for f in folded}
        return profile_mod.build(self.model, self.window, self.meta, folded, settings, self.now, sigs, loader)


def _fold(
    model: str,
    window: pp.Window,
    replies: list[Any],
    families: list[str],
    buckets: int,
    settings: Settings,
    now: float,
    loader: Callable[[str], Family] | None,
) -> pp.Profile:
    """CPU-bound: decode every bucket hash, merge them per family, fold into the profile."""
    meta = {k.decode(): float(v) for k, v in replies[0].items()}
    rest, per = replies[1:], 1 + buckets
    folded: dict[str, Folded] = {}
    signatures: dict[str, dict[str, bytes]] = {}
    for i, fam in enumerate(families):
        sigs, *hashes = rest[i * per : (i + 1) * per]
        folded[fam] = Folded.from_hashes(hashes)
        signatures[fam] = {k.decode(): v for k, v in sigs.items()}
    return profile_mod.build(model, window, meta, folded, settings, now, signatures, loader)


async def retrying(read: Callable[[], Awaitable[T]], within_s: float = READ_RETRY_S) -> T:
    """Run a read, again on a fresh connection while Redis is unreachable (a restart leaves every
    pooled connection dead; each failed one is dropped), for up to within_s; then let it fail."""
    deadline = time.monotonic() + within_s
    delay = 0.02
    while True:
        try:
            return await read()
        except RETRYABLE:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
