"""Every Redis key name the service uses, built in one place.

Hash tags keep what one Lua script touches in one cluster slot: `{q0}` for the work stream and its
dead letters, `{m:<model>}` for everything of one model. Names never get built inside Lua.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def glob_escape(text: str) -> str:
    """text matched literally in a SCAN MATCH pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


# The field of a model's meta hash holding the epoch minute of its newest prediction (produced_at, else
# accept time) that a worker applied: where the data is when a window is empty.
NEWEST_MINUTE = "newest_minute"


@dataclass(frozen=True)
class Keys:
    prefix: str = "hl"

    # --- the work queue (sharded: one stream per hash tag {q<n>}, so shards spread over a cluster) --
    def stream_for(self, shard: int) -> str:
        """STREAM: one entry per accepted batch; one consumer group per metric family."""
        return f"{self.prefix}:{{q{shard}}}:preds"

    def dead_letters_for(self, shard: int) -> str:
        """STREAM: entries a family gave up on, with their group and delivery count (same tag)."""
        return f"{self.prefix}:{{q{shard}}}:dlq"

    @property
    def stream(self) -> str:
        """The first shard's stream: the whole queue of a single-shard deployment."""
        return self.stream_for(0)

    @property
    def dead_letters(self) -> str:
        return self.dead_letters_for(0)

    # --- per tenant --------------------------------------------------------------------------
    def models(self, tenant: str = "default") -> str:
        """SET: the tenant's models (names within the tenant) with an accepted batch."""
        if tenant == "default":
            return f"{self.prefix}:models"
        return f"{self.prefix}:{{t:{tenant}}}:models"

    def models_index(self, tenant: str = "default") -> str:
        """ZSET: the same names as `models`, all scored 0, so ListModels pages through them in name order
        (ZRANGE BYLEX) without reading the whole set; written beside every SADD to `models`."""
        return self.models(tenant) + ":by_name"

    def audit(self, tenant: str) -> str:
        """STREAM: the tenant's audit trail (holistic/tenancy/audit.py). Its own hash tag, not the tenant's: deleting
        a tenant's data (whose keys share `{t:<tenant>}`) leaves the record of the deletion."""
        return f"{self.prefix}:{{a:{tenant}}}:audit"

    def retention(self, tenant: str) -> str:
        """STRING: the tenant's retention as last recorded in its audit trail (JSON; holistic/tenancy/retention.py), so
        a change of the retention file is audited once, old -> new, whichever janitor notices it first."""
        return f"{self.prefix}:{{a:{tenant}}}:retention"

    def retention_tenants(self) -> str:
        """SET: the tenants with a recorded retention: one dropped from the file is audited going back."""
        return f"{self.prefix}:retention:tenants"

    def rate(self, tenant: str, second: int) -> str:
        """STRING: predictions the tenant submitted in that epoch second (expires after 2 s)."""
        return f"{self.prefix}:{{t:{tenant}}}:rate:{second}"

    # --- per model -----------------------------------------------------------------------
    def _model(self, model: str) -> str:
        return f"{self.prefix}:{{m:{model}}}"

    def sequence(self, model: str) -> str:
        """STRING: INCR gives the next batch sequence number."""
        return f"{self._model(model)}:seq"

    def ingest(self, model: str, batch_id: str) -> str:
        """HASH with a TTL: seq, content hash, state (reserved|queued), count, accept time."""
        return f"{self._model(model)}:ingest:{batch_id}"

    def meta(self, model: str) -> str:
        """HASH: accepted predictions and batches, first and last accept time (the gateway), and the
        epoch minute of the newest prediction applied (`NEWEST_MINUTE`, the workers)."""
        return f"{self._model(model)}:meta"

    def done(self, model: str, family: str) -> str:
        """BITMAP: bit[seq] = 1 once the family applied that batch."""
        return f"{self._model(model)}:done:{family}"

    def stats(self, model: str, family: str, tier: str, bucket: int | None = None) -> str:
        """HASH of mergeable statistics; tier is "all" or a bucket tier of holistic/profile/windows.py: "m" (minute),
        "h" (hour), "d" (day), "d16" or "d256" (16 and 256 days), with the epoch-aligned bucket index."""
        suffix = tier if bucket is None else f"{tier}:{bucket}"
        return f"{self._model(model)}:st:{family}:{suffix}"

    def signatures(self, model: str, family: str) -> str:
        """HASH: signature id -> MetricSignature bytes, each configuration the family's workers applied
        the model's batches with (the statistics count predictions per id: holistic/families/signature.py)."""
        return f"{self._model(model)}:sig:{family}"

    def instances(self, model: str, family: str, day: int) -> str:
        """HASH with a TTL: instance key -> reduced state, for instances first applied on epoch day `day`;
        field "#n" counts them (holistic/stats/instances.py)."""
        return f"{self._model(model)}:inst:{family}:d:{day}"

    def group_keys(self, model: str) -> str:
        """SET: the distinct `groups` keys the model's predictions carried (capped at ingest)."""
        return f"{self._model(model)}:groups"

    def group_values(self, model: str, key: str) -> str:
        """SET: the distinct values of one `groups` key (capped at ingest)."""
        return f"{self._model(model)}:groups:{key}"

    def segment_values(self, model: str, key: str) -> str:
        """SET: the values of one segment key (HOLISTIC_SEGMENT_KEYS) admitted to a cell of their own, at most
        HOLISTIC_SEGMENT_TOP_K, first come first admitted (holistic/redis/lua/segment_admit.lua)."""
        return f"{self._model(model)}:seg:{key}"

    def updates(self, model: str) -> str:
        """STREAM (capped, no group): one entry per applied batch, for WatchProfile."""
        return f"{self._model(model)}:updates"

    def deleted(self, model: str) -> str:
        """STRING with a TTL, the tombstone of a deleted model: the last batch sequence number it had.
        apply.lua merges no batch numbered up to it (one a worker read before the deletion), and the
        model's next batch is numbered after it (holistic/redis/lua/deletion.lua)."""
        return f"{self._model(model)}:deleted"

    def deleting(self, model: str) -> str:
        """STRING with a short TTL: a deletion of the model is under way; its submits are refused."""
        return f"{self._model(model)}:deleting"

    # --- SCAN patterns (not keys: no row in holistic/redis/stored.py) -------------------------------------
    def model_keys_glob(self, models: str) -> str:
        """Every key of the models whose names match the glob `models` (glob_escape one name)."""
        return f"{self.prefix}:{{m:{models}}}:*"

    def tenant_keys_glob(self, tenant: str) -> str:
        """Every key under a tenant's hash tag (its rate counters; a tenant but the default's model set and
        index too) for the tenants matching the glob `tenant`."""
        return f"{self.prefix}:{{t:{tenant}}}:*"

    # --- shared between a family's replicas ---------------------------------------------------
    def memo(self, family: str, namespace: str, digest: bytes) -> str:
        """STRING with a TTL: a value the family's replicas compute once between them
        (holistic/families/shared_memo.py); `namespace` names what else determines it (a model's hash)."""
        return f"{self.prefix}:memo:{family}:{namespace}:{digest.hex()}"

    def memo_claim(self, family: str, namespace: str, digest: bytes) -> str:
        """STRING with a short TTL (the lease): the consumer computing that memo value now."""
        return f"{self.prefix}:memo-claim:{family}:{namespace}:{digest.hex()}"
