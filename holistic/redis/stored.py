"""What the service keeps in Redis, key family by key family: what each holds, who writes it, how long it lives.

The names come from holistic/redis/keys.py's builders (called here with placeholders, so this table cannot name a
key the code does not build); this module adds what a team must be able to answer for: whether a key holds
users' raw text (prompts, outputs, references, sources) or only statistics and identifiers, and its lifetime.
`tools/gen_docs.py` renders it as docs/reference/storage.md; tests/holistic/test_stored.py runs the service
over the demo predictions and fails on any key in Redis that no row describes, and on any builder without a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from holistic.redis.keys import Keys

RAW_TEXT = "raw text"  # users' prompts, outputs, references or sources, as submitted (or PII-redacted)
DERIVED = "derived"  # statistics, counts, ids, names and tags: no submitted text


class _Slot(str):
    """A placeholder for one argument of a key builder: formats as a marker the pattern turns into `(.+)`."""

    def hex(self) -> str:  # digest arguments are formatted with .hex()
        return str(self)


@dataclass(frozen=True)
class Stored:
    builder: str  # a Keys method
    args: tuple[str, ...]  # its arguments: "<name>" a placeholder, anything else a literal value
    redis_type: str
    holds: str
    content: str  # RAW_TEXT or DERIVED
    written_by: str
    lifetime: str

    def example(self, keys: Keys) -> str:
        """The key with its placeholders as <name>, for the docs."""
        return getattr(keys, self.builder)(*(_Slot(a) if a.startswith("<") else a for a in self.args))

    def pattern(self, keys: Keys) -> re.Pattern[str]:
        slots = [_Slot(f"\x01{i}\x01") if a.startswith("<") else a for i, a in enumerate(self.args)]
        built = re.escape(getattr(keys, self.builder)(*slots))
        return re.compile(re.sub("\x01\\d+\x01", "(.+)", built))


INVENTORY: tuple[Stored, ...] = (
    Stored("stream_for", ("<shard>",), "stream", "one entry per accepted batch: the versioned envelope with every "
           "prediction as submitted (its PII replaced with HOLISTIC_REDACT=on)", RAW_TEXT,
           "the gateway (submit.lua, XADD once per batch)",
           "until every family's group has acknowledged it; then the janitor trims it (XTRIM MINID); a tenant's "
           "raw-text retention removes it earlier, applied or not (docs/data-lifecycle.md)"),
    Stored("dead_letters_for", ("<shard>",), "stream", "entries a family gave up on, the envelope included, with the "
           "group and delivery count", RAW_TEXT, "workers (deadletter.lua)",
           "until replayed or deleted (`holistic dlq`), or its tenant's raw-text retention has passed"),
    Stored("models", ("default",), "set", "the default tenant's model names", DERIVED, "the gateway (submit.lua)",
           "for as long as the service runs"),
    Stored("models", ("<tenant>",), "set", "a tenant's model names", DERIVED, "the gateway (submit.lua)",
           "for as long as the service runs"),
    Stored("audit", ("<tenant>",), "stream", "the tenant's audit trail: deletions (model names, what was removed, "
           "by which admin), token use (a token's sha256 prefix, once an hour per gateway process), retention "
           "changes (old -> new) and the raw text they removed (counts)", DERIVED,
           "the gateway (holistic/tenancy/audit.py), the janitor (holistic/tenancy/retention_sweep.py)",
           "append-only: never trimmed, and kept when the tenant's data is deleted"),
    Stored("retention", ("<tenant>",), "string", "the tenant's retention (JSON) as last recorded in its audit trail",
           DERIVED, "the janitor (retention_record.lua)", "for as long as the service runs"),
    Stored("retention_tenants", (), "set", "the tenants with a recorded retention", DERIVED,
           "the janitor (holistic/queue/janitor.py)", "for as long as the service runs"),
    Stored("models_index", ("default",), "sorted set", "the default tenant's model names in name order (ListModels)",
           DERIVED, "the gateway (submit.lua), ListModels once for older data", "as the model set"),
    Stored("models_index", ("<tenant>",), "sorted set", "a tenant's model names in name order (ListModels)", DERIVED,
           "the gateway (submit.lua), ListModels once for older data", "as the model set"),
    Stored("rate", ("<tenant>", "<second>"), "string", "predictions a tenant submitted in one second", DERIVED,
           "the gateway (rate.lua)", "2 s"),
    Stored("sequence", ("<model>",), "string", "the model's last batch sequence number", DERIVED,
           "the gateway (submit.lua)", "for as long as the service runs"),
    Stored("ingest", ("<model>", "<batch_id>"), "hash", "one batch's sequence, content hash, state, count and accept "
           "time (idempotency)", DERIVED, "the gateway (submit.lua)", "HOLISTIC_IDEMPOTENCY_TTL_S (24 h)"),
    Stored("meta", ("<model>",), "hash", "accepted predictions and batches (in all and per family), first and last "
           "accept time, newest prediction minute; per family, batches and predictions a tenant's raw-text retention "
           "removed before the family applied them", DERIVED,
           "the gateway (submit.lua, accepted.lua); workers raise the newest minute (apply.lua); the janitor counts "
           "what retention removed (holistic/tenancy/retention_sweep.py)",
           "for as long as the service runs"),
    Stored("done", ("<model>", "<family>"), "bitmap", "one bit per batch sequence: the family applied it", DERIVED,
           "workers (apply.lua)", "for as long as the service runs"),
    Stored("stats", ("<model>", "<family>", "<tier>"), "hash", "mergeable statistics (counts, sums, histograms, "
           "sketch bins) of a family over all time or one time bucket; field names carry scenario names, group tags, "
           "perturbation names and classifier labels", DERIVED, "workers (apply.lua)",
           "minute buckets HOLISTIC_MINUTE_RETENTION_S (3 days), hour buckets HOLISTIC_HOUR_RETENTION_S (400 days), "
           "or the tenant's shorter retention (HOLISTIC_RETENTION_FILE, which may also limit day buckets); 16-day, "
           "256-day buckets and all time: no expiry"),
    Stored("signatures", ("<model>", "<family>"), "hash", "each configuration a family's workers applied the model's "
           "batches with (version, options, model hash)", DERIVED, "workers (apply.lua)",
           "for as long as the service runs"),
    Stored("instances", ("<model>", "<family>", "<day>"), "hash", "per-instance reduced state (prediction ids and "
           "numbers: worst cases, maxima, joins of variants with their originals)", DERIVED, "workers (apply.lua)",
           "HOLISTIC_INSTANCE_TTL_S (2 days), or the tenant's shorter raw-text retention, after the end of its day"),
    Stored("group_keys", ("<model>",), "set", "the distinct `groups` keys the model's predictions carried", DERIVED,
           "the gateway (group_caps.lua)", "for as long as the service runs"),
    Stored("group_values", ("<model>", "<key>"), "set", "the distinct values of one `groups` key", DERIVED,
           "the gateway (group_caps.lua)", "for as long as the service runs"),
    Stored("segment_values", ("<model>", "<key>"), "set", "the values of one segment key (a `metadata` key named "
           "in HOLISTIC_SEGMENT_KEYS) that have a cell of their own, first come, at most HOLISTIC_SEGMENT_TOP_K; "
           "metadata values as submitted, each at most HOLISTIC_SEGMENT_VALUE_MAX_CHARS", DERIVED,
           "workers (segment_admit.lua)", "for as long as the service runs"),
    Stored("updates", ("<model>",), "stream", "one entry per applied batch (family, sequence, count): what "
           "WatchProfile wakes on", DERIVED, "workers (apply.lua)", "capped (XADD MAXLEN ~)"),
    Stored("deleted", ("<model>",), "string", "a deleted model's tombstone: its last batch sequence number (no worker "
           "applies a batch numbered up to it; its next batch is numbered after it)", DERIVED,
           "DeleteModel, DeleteTenantData (delete_begin.lua)", "HOLISTIC_DELETION_TOMBSTONE_S (7 days)"),
    Stored("deleting", ("<model>",), "string", "a deletion of the model is under way: its submits are refused",
           DERIVED, "DeleteModel, DeleteTenantData (delete_begin.lua)",
           "until the deletion ends, at most 60 s after its last step"),
    Stored("memo", ("<family>", "<namespace>", "<digest>"), "string", "a value a family's replicas compute once "
           "between them (an embedding of a text, keyed by the text's digest)", DERIVED, "workers (shared_memo.py)",
           "the family's memo TTL (summarization: HOLISTIC_SUMMARIZATION_SHARED_CACHE_S, 900 s)"),
    Stored("memo_claim", ("<family>", "<namespace>", "<digest>"), "string", "the consumer computing a memo value now",
           DERIVED, "workers (shared_memo.py)", "the lease (summarization: HOLISTIC_SUMMARIZATION_SHARED_LEASE_S)"),
)  # fmt: skip


class Inventory:
    """INVENTORY's patterns for one key prefix: which row describes a key."""

    def __init__(self, keys: Keys | None = None) -> None:
        self.keys = keys or Keys()

    @cached_property
    def _patterns(self) -> list[tuple[re.Pattern[str], Stored]]:
        return [(row.pattern(self.keys), row) for row in INVENTORY]

    def _match(self, key: str) -> tuple[re.Match[str], Stored] | None:
        """The most specific row whose pattern matches the whole key (literal text beats a placeholder)."""
        found = [(p, m, row) for p, row in self._patterns if (m := p.fullmatch(key))]
        if not found:
            return None
        _, match, row = max(found, key=lambda pmr: len(pmr[0].pattern.replace("(.+)", "")))
        return match, row

    def describe(self, key: str) -> Stored | None:
        """The row that describes the key, or None."""
        found = self._match(key)
        return found[1] if found else None

    def model_of(self, key: str) -> str | None:
        """The (stored) model a key belongs to, when its row is one of a model's."""
        found = self._match(key)
        if found is None or "<model>" not in found[1].args:
            return None
        match, row = found
        slots = [a for a in row.args if a.startswith("<")]
        return match.group(slots.index("<model>") + 1)

    def label(self, row: Stored) -> str:
        """The row's key family as the storage reference writes it (placeholders as <name>)."""
        return row.example(self.keys)
