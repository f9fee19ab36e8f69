"""Reads a model's statistics over a window from Redis and folds them into a Profile."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis.asyncio as aioredis

from gateway.deployment import Deployment
from holistic import profile as profile_mod
from holistic import windows
from holistic.errors import FieldViolation, InvalidArgument, NotFound
from holistic.families import Family
from holistic.keys import Keys
from holistic.settings import Settings
from holistic.stats import Folded
from holistic.tenants import DEFAULT_TENANT, internal_model
from holistic.v1 import profile_pb2 as pp

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

    @classmethod
    def from_request(cls, request: object) -> WindowSpec:
        which = request.WhichOneof("window")  # type: ignore[attr-defined]
        if which == "range":
            r = request.range  # type: ignore[attr-defined]
            if not r.HasField("start_time") or not r.HasField("end_time"):
                raise InvalidArgument([FieldViolation("range", "needs both start_time and end_time")])
            start = r.start_time.seconds + r.start_time.nanos * 1e-9
            end = r.end_time.seconds + r.end_time.nanos * 1e-9
            if end <= start:
                raise InvalidArgument([FieldViolation("range.end_time", "must be after start_time")])
            return cls(pp.WINDOW_PRESET_UNSPECIFIED, start, end)
        preset = request.preset if which == "preset" else pp.WINDOW_PRESET_ALL_TIME  # type: ignore[attr-defined]
        if preset not in PRESET_NAMES:
            raise InvalidArgument([FieldViolation("preset", f"unknown window preset {preset}")])
        return cls(preset or pp.WINDOW_PRESET_ALL_TIME)

    def resolve(self, now_s: float, minute_retention_s: float) -> windows.Resolved:
        if self.start_s is not None and self.end_s is not None:
            return windows.resolve(self.start_s, self.end_s, now_s, minute_retention_s)
        return windows.resolve_preset(PRESET_NAMES[self.preset], now_s, minute_retention_s)


def window_message(spec: WindowSpec, resolved: windows.Resolved) -> pp.Window:
    w = pp.Window(preset=spec.preset, resolution_seconds=resolved.resolution_s)
    if not resolved.all_time:
        w.range.start_time.FromSeconds(int(resolved.start_s))  # type: ignore[arg-type]
        w.range.end_time.FromSeconds(int(resolved.end_s))  # type: ignore[arg-type]
    return w


class ProfileReader:
    def __init__(
        self,
        r: aioredis.Redis,
        settings: Settings,
        deployment: Deployment | None = None,
        families: Callable[[str], Family] | None = None,
    ) -> None:
        self.r = r
        self.settings = settings
        self.keys = Keys(settings.key_prefix)
        self.deployment = deployment or Deployment(r, self.keys, settings.queue_shards)
        self.families = families

    async def exists(self, model: str, tenant: str = DEFAULT_TENANT) -> bool:
        return bool(await self.r.sismember(self.keys.models(tenant), model))

    async def profile(self, public: str, spec: WindowSpec, tenant: str = DEFAULT_TENANT) -> pp.Profile:
        """The profile of the tenant's model `public`; NotFound for a model the tenant never sent."""
        model = internal_model(tenant, public)
        now = time.time()
        resolved = spec.resolve(now, self.settings.minute_retention_s)
        families = await self.deployment.families()
        pipe = self.r.pipeline(transaction=False)
        pipe.hgetall(self.keys.meta(model))
        for fam in families:
            pipe.hgetall(self.keys.signatures(model, fam))
            for tier, bucket in resolved.buckets:
                pipe.hgetall(self.keys.stats(model, fam, tier, bucket))
        replies = await pipe.execute()
        meta_raw, rest = replies[0], replies[1:]
        if not meta_raw and not await self.exists(public, tenant):
            raise NotFound(f"no predictions were ever accepted for model {public!r}")
        meta = {k.decode(): float(v) for k, v in meta_raw.items()}
        per = 1 + len(resolved.buckets)
        folded: dict[str, Folded] = {}
        signatures: dict[str, dict[str, bytes]] = {}
        for i, fam in enumerate(families):
            sigs, *hashes = rest[i * per : (i + 1) * per]
            folded[fam] = Folded.from_hashes(hashes)
            signatures[fam] = {k.decode(): v for k, v in sigs.items()}
        profile = profile_mod.build(
            model, window_message(spec, resolved), meta, folded, self.settings, now, signatures, self.families
        )
        profile.model = public
        return profile

    async def list_models(self, tenant: str = DEFAULT_TENANT) -> list[pp.ModelSummary]:
        models = sorted(m.decode() for m in await self.r.smembers(self.keys.models(tenant)))
        pipe = self.r.pipeline(transaction=False)
        for m in models:
            pipe.hgetall(self.keys.meta(internal_model(tenant, m)))
        out = []
        for model, raw in zip(models, await pipe.execute(), strict=True):
            meta = {k.decode(): int(v) for k, v in raw.items()}
            s = pp.ModelSummary(
                model=model,
                accepted_predictions=meta.get("accepted_predictions", 0),
                accepted_batches=meta.get("accepted_batches", 0),
            )
            if "first_accept_ms" in meta:
                s.first_accept_time.FromMilliseconds(meta["first_accept_ms"])
                s.last_accept_time.FromMilliseconds(meta.get("last_accept_ms", meta["first_accept_ms"]))
            out.append(s)
        return out
