"""Per-instance state: quantities reduced over an instance's rows, whatever order and batch they come in.

HELM's worst case (robustness, fairness) and expected max toxicity are means over *instances* of a
value reduced (min or max) over the instance's rows: the original and its perturbed variants, or
several completions. Rows of one instance arrive in any batch, in any order, on any replica, so a
family cannot fold them in one compute. This module keeps, per instance, its reduced **slots**
(one per kind of row, e.g. "o" for the original and "p:typos" for a variant) and the **minute** the
instance is attributed to (the earliest produced_at minute of its rows, so attribution does not
depend on arrival order). A family declares an `InstanceSpec`: the reducer of each slot and how
slots **derive** the instance's window quantities (e.g. worst = min over all slots). Each quantity q
is kept in the family's ordinary time-bucketed statistics as `q|n`, `q|sum`, `q|sumsq` and one
`q|ge:<t>` count per threshold, in the instance's minute: a mean over instances with its interval.
When a later row changes an instance (a variant lowers the min, an earlier row moves its minute),
the aggregates get the difference: the old contribution is subtracted where it was, the new one
added where it belongs. So a window's aggregates always equal a one-pass computation over the
current states of the instances attributed to it.

Segment cells: each contribution above is also added, or taken back, under each of the instance's cells
("#seg|<key>|<cell>|q|..."), so a cell's aggregates are those of the instances in it; an instance whose cell
changes is taken back from the old cell and added to the new (which cell: holistic/stats/instance_state.py).

Storage: instance states live in Redis hashes `inst:<family>:d:<day>`, one per day of first apply
(Redis's clock, so every replica agrees on the day), field = instance key, value = `State.encode()`.
A day's hash expires HOLISTIC_INSTANCE_TTL_S after the day ends: state lives TTL to TTL + 1 day. Each hash counts its
instances in field "#n"; HOLISTIC_INSTANCE_CAP bounds the live total (read before each apply, so
concurrent replicas may overshoot it by one apply each). Rows of new instances past the cap are
left out and counted (`#inst|over_cap`); rows produced more than the TTL before their batch was
accepted are counted (`#inst|late`): their partners' state may have expired, so they may be counted
as a separate instance, which is where a TTL departs from HELM's run-level semantics.

Exactly once: the runner reads the touched instances (`InstanceStore.plan`), computes new states
and the aggregate deltas, and applies them with apply.lua in one script together with the batch's
done bit; the script first checks that every state it read is unchanged ('=' conditions, and 'n'
for a new instance: absent, then set) and otherwise writes nothing and returns -1, and the runner
reads again and retries. Every key goes through KEYS[] (cluster-safe: all under the model's hash tag).

Why one absence check suffices: the day is Redis's (`TIME`, by clock.lua on the hashes' node, read in
the same pipeline as the states), and an apply that creates instances checks that Redis's day is
still the one it planned for ('@'); so two replicas that both found an instance absent create it in
the same day's hash, where the second one's 'n' fails. (Before, each replica used its own clock and
checked yesterday's, today's and tomorrow's hashes: three conditions and twelve arguments per new
instance instead of one and three.) Within CLOCK_STEP_S of midnight the neighbouring day's hash is
checked as well, in case Redis's clock steps back or a failover lands on a node whose clock differs
by less than that.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple, Protocol

from holistic.redis.keys import Keys
from holistic.redis.scripts import source
from holistic.stats.instance_state import Cells, State, join_cells
from holistic.stats.mergeable import Stats
from holistic.stats.names import SEGMENT_PREFIX, key
from holistic.stats.names import SEP as NAME_SEP

DAY = 86_400
CLOCK_STEP_S = 600  # near midnight (either side), a new instance is also checked absent in the other day's hash
COUNT_FIELD = "#n"
OVER_CAP = key("#inst", "over_cap")
LATE = key("#inst", "late")
SEP = "\x1f"

Reducer = Literal["min", "max"]


def at_least(threshold: float) -> str:
    """The part of a quantity's count of instances with value >= threshold: "ge:<t>"."""
    return f"ge:{threshold:g}"


class StateConflict(Exception):
    """Other replicas kept changing the instances a batch touches; it is retried later."""


class Row(NamedTuple):
    """One prediction's contribution to one instance: a value for one slot (a tuple: made for every
    scored prediction, several times for a worst case, and a frozen dataclass costs 4x to build)."""

    instance: str
    slot: str
    value: float
    minute: int


# new_row(Row, (instance, slot, value, minute)): a Row without NamedTuple's generated __new__, which is
# Python code and costs ~3x (rows are made several times a prediction by the worst-case families)
new_row = tuple.__new__


class InstanceSpec(Protocol):
    def reducer(self, slot: str) -> Reducer:
        """How repeated values of a slot combine (a duplicate row is folded, not counted twice)."""
        ...

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        """The instance's window quantities (statistics field prefix -> value) from its slots."""
        ...

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        """Values t for which `quantity|ge:<t>` counts the instances with value >= t. A spec whose
        quantities have none may say so with a class attribute `thresholded = False` (read once)."""
        ...


def _reduce(how: Reducer, a: float, b: float) -> float:
    return min(a, b) if how == "min" else max(a, b)


def merge(spec: InstanceSpec, old: State | None, new: State) -> State:
    """old and new folded: each slot reduced, the earlier minute kept."""
    if old is None:
        return State(new.minute, dict(new.slots), dict(new.cells) if new.cells else None)
    slots = dict(old.slots)
    for slot, v in new.slots.items():
        slots[slot] = _reduce(spec.reducer(slot), slots[slot], v) if slot in slots else v
    cells = dict(old.cells) if old.cells else None
    if new.cells:
        cells = cells or {}
        join_cells(cells, new.cells)
    return State(min(old.minute, new.minute), slots, cells)


def fold_rows(spec: InstanceSpec, rows: Iterable[Row], cells: Mapping[str, Cells] | None = None) -> dict[str, State]:
    """A batch's rows reduced per instance (before anything is read from Redis): merge of each row's
    state in turn, folded in place; `cells`: the instances' segment cells (Partial.cells)."""
    out: dict[str, State] = {}
    for instance, slot, value, minute in rows:  # unpacked: ~25% faster than four attribute reads
        state = out.get(instance)
        if state is None:
            out[instance] = State(minute, {slot: value})
            continue
        if minute < state.minute:
            state.minute = minute
        slots = state.slots
        if slot in slots:
            slots[slot] = _reduce(spec.reducer(slot), slots[slot], value)
        else:
            slots[slot] = value
    if cells:
        for instance, c in cells.items():
            state = out.get(instance)
            if state is not None and c:
                state.cells = dict(c)
    return out


@lru_cache(maxsize=1 << 16)
def _moment_fields(quantity: str) -> tuple[str, str, str]:
    return key(quantity, "n"), key(quantity, "sum"), key(quantity, "sumsq")


Fields = tuple[str, str, str, tuple[tuple[float, str], ...]]


class _QuantityFields(dict[str, Fields]):
    """A quantity's fields (n, sum, sumsq) and its thresholds with their count fields, asked of the
    spec once per quantity name (for one plan: a spec's thresholds may depend on its settings)."""

    def __init__(self, spec: InstanceSpec) -> None:
        super().__init__()
        self.spec = spec

    def __missing__(self, q: str) -> Fields:
        # a segment cell's copy "#seg|<key>|<cell>|<q>" has q's thresholds (neither key nor cell holds SEP)
        own = q.split(NAME_SEP, 3)[3] if q.startswith(SEGMENT_PREFIX) else q
        out = self[q] = (*_moment_fields(q), tuple((t, key(q, at_least(t))) for t in self.spec.thresholds(own)))
        return out


class _Sums:
    """Instances' contributions summed per (minute, quantity) as [n, sum, sumsq], then spread into
    their statistics fields once per quantity (`into`) instead of once per instance: each field gets
    the same additions in the same order, from zero, so the floats are those of adding them one by
    one into empty statistics."""

    def __init__(self, spec: InstanceSpec) -> None:
        self.fields = _QuantityFields(spec)
        self.thresholded = getattr(spec, "thresholded", True)  # False: no quantity has thresholds
        self.by_minute: dict[int, dict[str, list[float]]] = {}
        self.counts: dict[int, dict[str, int]] = {}  # minute -> threshold count field -> count

    def add(self, state: State, sign: int, derived: dict[str, float]) -> None:
        """Add (sign +1) or take back (-1) the quantities `derived` (spec.derive of state) in its minute,
        and the same under each of its segment cells ("#seg|<key>|<cell>|<q>", bounded by the keys)."""
        minute = state.minute
        sums = self.by_minute.get(minute)
        if sums is None:
            sums = self.by_minute[minute] = {}
        if state.cells:  # each cell: one more call, made only by states with cells
            for k, part in state.cells.items():
                prefix = f"{SEGMENT_PREFIX}{k}{NAME_SEP}{part}{NAME_SEP}"
                self.add(State(minute), sign, {prefix + q: v for q, v in derived.items()})
        if sign == 1 and not self.thresholded:  # the common case, a new instance: 1 * v is v exactly
            for q, v in derived.items():
                acc = sums.get(q)
                if acc is None:
                    sums[q] = [1, 0.0 + v, 0.0 + v * v]
                else:
                    acc[0] += 1
                    acc[1] += v
                    acc[2] += v * v
            return
        fields = self.fields if self.thresholded else None
        for q, v in derived.items():
            acc = sums.get(q)
            if acc is None:
                sums[q] = [sign, 0.0 + sign * v, 0.0 + sign * v * v]
            else:
                acc[0] += sign
                acc[1] += sign * v
                acc[2] += sign * v * v
            thresholds = fields[q][3] if fields is not None else ()
            if thresholds:
                counts = self.counts.setdefault(minute, {})
                for t, count in thresholds:
                    if v >= t:
                        counts[count] = counts.get(count, 0) + sign

    def into(self, out: dict[int, Stats]) -> None:
        for minute, sums in self.by_minute.items():
            st = out.get(minute)
            if st is None:
                st = out[minute] = Stats()
            ints, floats = st.ints, st.floats
            for q, (n, total, squares) in sums.items():
                fn, ftotal, fsquares, _ = self.fields[q]
                ints[fn] = ints.get(fn, 0) + int(n)
                floats[ftotal] = floats.get(ftotal, 0.0) + total
                floats[fsquares] = floats.get(fsquares, 0.0) + squares
            for count, c in self.counts.get(minute, {}).items():
                ints[count] = ints.get(count, 0) + c
        self.by_minute.clear()
        self.counts.clear()


def _changed(
    spec: InstanceSpec,
    instance: str,
    old: State | None,
    new: State,
    sums: _Sums,
    out: dict[int, Stats] | None = None,
) -> None:
    """Sum what changes in the aggregates when the instance goes from old to new; with `out`, spread
    each contribution into it in turn (its floats may hold sums already: the order of additions)."""
    derived = spec.derive(instance, new.slots)
    if old is not None:
        before = spec.derive(instance, old.slots)
        if old.minute == new.minute and before == derived and old.cells == new.cells:
            return
        sums.add(old, -1, before)
        if out is not None:
            sums.into(out)
    sums.add(new, +1, derived)
    if out is not None:
        sums.into(out)


def deltas(spec: InstanceSpec, instance: str, old: State | None, new: State, out: dict[int, Stats]) -> None:
    """Add to `out` (by minute) what changes in the aggregates when the instance goes from old to new."""
    _changed(spec, instance, old, new, _Sums(spec), out)


def aggregate(spec: InstanceSpec, states: Mapping[str, State]) -> dict[int, Stats]:
    """The aggregates of final states computed from scratch: what streaming must add up to."""
    out: dict[int, Stats] = {}
    sums = _Sums(spec)
    for instance, state in states.items():
        sums.add(state, +1, spec.derive(instance, state.slots))
    sums.into(out)
    return out


@dataclass
class Plan:
    """What one apply writes: state-hash ops (key -> ttl, op triples) and aggregate deltas by minute."""

    hashes: dict[str, tuple[int, list[Any]]]
    by_minute: dict[int, Stats]


class InstanceStore:
    """Reads the instances a batch touches and plans the compare-and-set apply of its rows.

    offset_s shifts Redis's clock as this store sees it (tests: any day, any time of day); the
    apply's '@' check applies the same shift, so production leaves it 0."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        family: str,
        ttl_s: int,
        cap: int,
        offset_s: float = 0.0,
        cluster: bool = False,
        ttl_of: Callable[[str], int] | None = None,
    ) -> None:
        self.r = client
        self.keys = keys
        self.family = family
        self.ttl_s = ttl_s
        self.ttl_of = ttl_of  # model -> its state's TTL, at most ttl_s (a tenant's raw-text retention)
        self.cap = cap
        self.offset_s = offset_s
        self._skew = offset_s  # Redis's clock (shifted) minus ours at the last read: which days to read
        self._clock = client.register_script(source("clock"))
        self.cluster = cluster  # a cluster pipeline refuses scripts: the clock is read before it

    def live_days(self, now: float) -> list[int]:
        """Days whose hash may still exist, and tomorrow (Redis's clock may have stepped back)."""
        return list(range(math.floor((now - self.ttl_s) / DAY), math.floor(now / DAY) + 2))

    def late(self, rows: list[Row], accept_s: float, by_minute: dict[int, Stats]) -> None:
        """Count one batch's rows produced before its instances' state could still be live (accepted
        at accept_s), in the batch's first minute."""
        if not rows:
            return
        minutes = [r.minute for r in rows]
        first = min(minutes)
        if first * 60 >= accept_s - self.ttl_s:  # the usual case: none is late
            return
        late = sum(1 for m in minutes if m * 60 < accept_s - self.ttl_s)
        by_minute.setdefault(first, Stats()).incr(LATE, late)

    def _read(self, model: str, names: list[str]) -> tuple[float, list[int], list[str], list[Any]]:
        """Redis's time (shifted), the live days, their hashes' keys and, per day, the HMGET of "#n" and
        names: one round trip. Which days to read is guessed with our clock and the last skew; a guess
        that Redis's clock proves wrong (our clock moved across a day boundary against Redis's) is read
        again."""
        days = self.live_days(time.time() + self._skew)
        while True:
            pipe = self.r.pipeline(transaction=False)
            shards = [self.keys.instances(model, self.family, d) for d in days]
            # first, on the hashes' node: the HMGETs run at or after this instant (one connection, in order).
            # One Redis: a plain TIME (a script in a pipeline costs redis-py a SCRIPT EXISTS round trip first)
            clock = self._clock(keys=shards[:1]) if self.cluster else pipe.time()
            for shard in shards:
                pipe.hmget(shard, [COUNT_FIELD, *names])
            replies = pipe.execute()
            seconds, micros = clock if self.cluster else replies.pop(0)
            now = int(seconds) + int(micros) / 1e6 + self.offset_s
            self._skew = now - time.time()
            wanted = self.live_days(now)
            if wanted == days:
                return now, days, shards, replies
            days = wanted

    def plan(
        self,
        model: str,
        spec: InstanceSpec,
        rows: list[Row],
        accept_s: float | None,
        cells: Mapping[str, Cells] | None = None,
    ) -> Plan:
        """accept_s None: the caller counts late rows itself (batches applied together, see late).
        cells: the touched instances' segment cells (Partial.cells), joined with their stored ones."""
        if not rows:
            return Plan({}, {})
        parts = fold_rows(spec, rows, cells)  # fresh states, this plan's own: a new instance's is used as it is
        names = sorted(parts)
        row_counts: Counter[str] | None = None  # rows per instance: only for rows left out past the cap
        sums = _Sums(spec)  # the aggregates' deltas, into by_minute at the end
        now, days, shard_keys, replies = self._read(model, names)
        found: dict[str, tuple[int, bytes]] = {}
        live = 0
        for i, reply in enumerate(replies):
            live += int(reply[0] or 0)
            for name, raw in zip(names, reply[1:], strict=True):
                if raw is not None and name not in found:
                    found[name] = (i, raw)

        day = math.floor(now / DAY)
        today = days.index(day)
        # A new instance goes to Redis's today (the apply checks the day is still `day`: '@'), so a
        # rival that also found it absent creates it there too: one 'n' (absent, then set) is the
        # whole check; near midnight the other day's hash is checked as well (a clock step).
        into_day = now - day * DAY
        neighbour = day - 1 if into_day < CLOCK_STEP_S else day + 1 if DAY - into_day < CLOCK_STEP_S else None
        also = [] if neighbour is None else [days.index(neighbour)]  # live: the TTL is at least an hour
        ops: list[list[Any]] = [[] for _ in days]
        by_minute: dict[int, Stats] = {}
        room = self.cap - live
        created = 0
        for name in names:
            part = parts[name]
            hit = found.get(name)
            if hit is None:
                if created >= room:
                    row_counts = row_counts or Counter(r.instance for r in rows)
                    by_minute.setdefault(part.minute, Stats()).incr(OVER_CAP, row_counts[name])
                    continue
                for i in also:
                    ops[i] += ("!", name, "")
                created += 1
                ops[today] += ("n", name, part.encode())
                _changed(spec, name, None, part, sums)
                continue
            shard, raw = hit
            text = raw.decode()
            old = State.decode(text)
            new = merge(spec, old, part)
            ops[shard] += ("=", name, text)
            encoded = new.encode()
            if encoded != text:
                ops[shard] += ("s", name, encoded)
                _changed(spec, name, old, new, sums)
        sums.into(by_minute)
        if created:
            ops[today] += ("i", COUNT_FIELD, created, "@", repr(self.offset_s), day)
        if accept_s is not None:
            self.late(rows, accept_s, by_minute)
        ttl = self.ttl_s if self.ttl_of is None else min(self.ttl_s, self.ttl_of(model))
        hashes = {
            shard: (max(1, (d + 1) * DAY + ttl - int(now)), shard_ops)
            for shard, d, shard_ops in zip(shard_keys, days, ops, strict=True)
            if shard_ops
        }
        return Plan(hashes, by_minute)
