"""One computed batch on its way to apply.lua, and batches of one read applied together.

Every batch writes its statistics to every time tier (a minute bucket, the hour, day, 16 days, 256
days and all time): under a backlog most of Redis's work, and much of the worker's, is those coarse
tiers, the same for every batch of a model. The batches of one read that share a model are applied by
one script (`coalesce`): their statistics summed per minute, the tiers written once, every one of
their done bits checked and set together, so the exactly-once rule is per batch as before. Where one
of them turns out to be applied already (a redelivery, another replica), the script writes nothing
and the runner applies them one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from holistic.families import Partial
from holistic.profile.windows import tier_buckets
from holistic.queue import envelope as env_mod
from holistic.redis.keys import NEWEST_MINUTE, Keys
from holistic.settings import Settings
from holistic.stats.mergeable import Stats, signature_field
from holistic.tenancy.retention import Retention, defaults

UPDATES_MAXLEN = 1000  # entries kept on a model's updates stream (the watchers' wake-up calls)


@dataclass
class Work:
    entry_id: str
    entry: env_mod.Entry
    batch_id: str
    n: int
    by_minute: dict[int, Stats]
    partial: Partial | None = None
    accept_s: float = 0.0
    traceparent: str = ""
    stream: str = ""  # the work stream it was read from; "" skips apply.lua's pending check (a cluster)
    per_minute: dict[int, int] = field(default_factory=dict)  # predictions per minute, for the signature count
    members: list[Work] = field(default_factory=list)  # batches applied together (coalesce); empty: itself
    redaction: str = ""  # the envelope's: counted under a signature that records it
    evaluations: list[Any] = field(default_factory=list)  # gen_ai.evaluation.result records, sent once merged

    @property
    def batches(self) -> list[Work]:
        return self.members or [self]


def coalesce(work: list[Work], max_predictions: int) -> list[Work]:
    """The works of one read grouped per model (in read order) into applies of at most max_predictions
    predictions (a bigger batch goes alone); a group of one is the work itself."""
    open_: dict[tuple[str, bool, str], list[Work]] = {}
    groups: list[list[Work]] = []
    for w in work:
        kind = (w.entry.model, w.partial is None, w.redaction)  # one signature per apply
        group = open_.get(kind)
        if group is None or sum(g.n for g in group) + w.n > max_predictions:
            group = open_[kind] = []
            groups.append(group)
        group.append(w)
    return [g[0] if len(g) == 1 else merged(g) for g in groups]


def merged(ws: list[Work]) -> Work:
    """One work for several batches of one model: statistics summed per minute in batch order,
    instance rows concatenated (their late rows are counted per batch, see InstanceStore.late)."""
    first = ws[0]
    by_minute: dict[int, Stats] = {}
    per_minute: dict[int, int] = {}
    for w in ws:
        for minute, st in w.by_minute.items():
            by_minute.setdefault(minute, Stats()).merge(st)
        for minute, count in w.per_minute.items():
            per_minute[minute] = per_minute.get(minute, 0) + count
    partial = None
    if first.partial is not None:
        partial = Partial(by_minute, first.partial.spec)
        for w in ws:
            if w.partial is not None:
                partial.join(w.partial)
    return Work(
        first.entry_id, first.entry, first.batch_id, sum(w.n for w in ws), by_minute, partial, first.accept_s,
        first.traceparent, first.stream, per_minute, members=list(ws), redaction=first.redaction,
    )  # fmt: skip


def apply_args(
    w: Work,
    keys: Keys,
    family: str,
    settings: Settings,
    signature: tuple[str, bytes],
    write_signature: bool,
    by_minute: dict[int, Stats] | None = None,
    hashes: dict[str, tuple[int, list[Any]]] | None = None,
    newest_minute: int | None = None,
    retention: Retention | None = None,
) -> tuple[list[str], list[Any]]:
    """KEYS and ARGV of apply.lua: the statistics tiers of by_minute (default: w's), then any
    instance-state hashes with their ops. signature: the worker's (id, bytes); its id counts the
    predictions, its bytes are written beside them while write_signature. newest_minute: raised on
    the model's meta hash (kept at its max) when given. retention: the model's tenant's (holistic/tenancy/retention.py;
    default: the global settings), whose tiers' TTLs the buckets get."""
    by_minute = w.by_minute if by_minute is None else by_minute
    model = w.entry.model
    sid, raw_signature = signature
    stamp = signature_field(sid)
    stamped = {m: Stats().merge(st) for m, st in by_minute.items()}
    for minute, count in w.per_minute.items():
        stamped.setdefault(minute, Stats()).incr(stamp, count)
    retention = retention or defaults(settings)
    ttl = {tier: retention.tier_ttl(tier) for tier in ("m", "h", "d")}  # coarser tiers are kept
    members: dict[str, tuple[int, list[Stats]]] = {}
    for minute, st in stamped.items():
        for tier, bucket in tier_buckets(minute):
            key = keys.stats(model, family, tier, bucket)
            if key in members:
                members[key][1].append(st)
            else:
                members[key] = (ttl.get(tier, 0), [st])
    total = Stats()
    for st in stamped.values():
        total.merge(st)
    tiers: dict[str, tuple[int, Stats]] = {}
    for key, (seconds, parts) in members.items():
        # A bucket holding every minute of the batch (a batch within one day, hour...) sums the same
        # minutes in the same order as the total: the same floats, so it is the total, merged once.
        tiers[key] = (seconds, total if len(parts) == len(stamped) else _summed(parts))
    if stamped:
        tiers[keys.stats(model, family, "all")] = (0, total)
    out_keys = [keys.done(model, family), keys.updates(model), keys.deleted(model)] + ([w.stream] if w.stream else [])
    batches = w.batches
    args: list[Any] = [
        " ".join(str(b.entry.seq) for b in batches), UPDATES_MAXLEN, family, " ".join(str(b.n) for b in batches),
        " ".join(b.entry_id for b in batches) if w.stream else "",
    ]  # fmt: skip
    ops_of: dict[int, list[Any]] = {}  # a Stats shared by several tiers is flattened once
    hash_ops: list[tuple[str, int, list[Any]]] = []
    for key, (seconds, st) in tiers.items():
        if id(st) not in ops_of:
            ops_of[id(st)] = st.lua_ops()
        hash_ops.append((key, seconds, ops_of[id(st)]))
    if write_signature:  # until one apply wrote it: the signature beside its counts
        hash_ops.append((keys.signatures(model, family), 0, ["s", sid, raw_signature]))
    if newest_minute is not None:
        hash_ops.append((keys.meta(model), 0, [">", NEWEST_MINUTE, str(newest_minute)]))
    sent: dict[int, int] = {}  # id(ops) -> 1-based index of the hash that carried them
    for i, (key, seconds, ops) in enumerate(hash_ops + [(k, t, ops) for k, (t, ops) in (hashes or {}).items()]):
        out_keys.append(key)
        if id(ops) in sent:  # a tier with the same sums as an earlier one: apply.lua reuses its ops
            args += [seconds, -sent[id(ops)]]
        else:
            sent[id(ops)] = i + 1
            args += [seconds, len(ops) // 3, *ops]
    return out_keys, args


def _summed(parts: list[Stats]) -> Stats:
    """The parts summed in order into a new Stats (as the tiers always were)."""
    out = Stats()
    for st in parts:
        out.merge(st)
    return out
