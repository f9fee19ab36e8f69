"""Per-tenant quotas: predictions per second (shared by every gateway process, kept in Redis) and a
share of the backlog cap (from the tenant's accepted-but-not-yet-applied batches)."""

from __future__ import annotations

import logging
import math
import time

import redis.asyncio as aioredis

from gateway.deployment import Deployment
from gateway.poller import Poller
from holistic.errors import Backpressure
from holistic.redis.connection import set_chunks
from holistic.redis.keys import Keys
from holistic.redis.scripts import Scripts
from holistic.settings import Settings
from holistic.tenancy.tenants import TokenStore, internal_model

log = logging.getLogger("holistic.gateway")
MEASURE_CHUNK = 256  # models a round trip when measuring a tenant's backlog


class Quotas:
    def __init__(
        self, r: aioredis.Redis, settings: Settings, tokens: TokenStore, deployment: Deployment, interval_s: float = 1.0
    ) -> None:
        self.r = r
        self.deployment = deployment
        self.settings = settings
        self.tokens = tokens
        self.keys = Keys(settings.key_prefix)
        self.scripts = Scripts(r)
        self.interval_s = interval_s
        self.backlog: dict[str, int] = {}  # tenant -> batches accepted but not applied by every family
        self._poller = Poller("tenant-backlog", self.measure, interval_s)

    async def admit(self, tenant: str, n: int) -> None:
        """Raise Backpressure (RetryInfo) when the tenant is over its rate or its backlog share."""
        limit = self.settings.predictions_per_s_for(tenant)
        if limit:
            now = time.time()
            used = await self.scripts.rate(keys=[self.keys.rate(tenant, int(now))], args=[n, limit])
            if used >= 0:
                retry = max(0.05, math.ceil(now) - now)
                raise Backpressure(
                    retry,
                    f"tenant:{tenant}:predictions-per-second",
                    f"{used} of {limit} predictions used this second",
                    f"tenant {tenant!r} is over its {limit} predictions/s; retry in {retry:.2f} s",
                )
        share = self.settings.backlog_share_for(tenant)
        if share < 1.0:
            allowed = max(1, int(share * self.settings.backlog_max_batches))
            held = self.backlog.get(tenant, 0)
            if held >= allowed:
                raise Backpressure(
                    1.0,
                    f"tenant:{tenant}:backlog-share",
                    f"{held} batches not yet applied; share {share:g} of the cap = {allowed}",
                    f"tenant {tenant!r} holds {held} unapplied batches, its share of the backlog; retry later",
                )

    async def measure(self) -> None:
        """Per tenant with a share below 1: accepted batches minus those every family applied."""
        families = await self.deployment.families()
        tenants = [t for t in self.tokens.tenants() if self.settings.backlog_share_for(t) < 1.0]
        step = 1 + len(families)
        for tenant in tenants:
            held = 0
            async for names in set_chunks(self.r, self.keys.models(tenant), MEASURE_CHUNK):
                pipe = self.r.pipeline(transaction=False)
                for m in names:
                    internal = internal_model(tenant, m.decode())
                    pipe.hget(self.keys.meta(internal), "accepted_batches")
                    for f in families:
                        pipe.bitcount(self.keys.done(internal, f))
                replies = await pipe.execute()
                for i in range(len(names)):
                    accepted = int(replies[i * step] or 0)
                    applied = min(replies[i * step + 1 : (i + 1) * step], default=accepted)
                    held += max(0, accepted - applied)
            self.backlog[tenant] = held

    async def start(self) -> None:
        if any(self.settings.backlog_share_for(t) < 1.0 for t in self.tokens.tenants()):
            self._poller.start()

    async def stop(self) -> None:
        await self._poller.stop()
