"""Segments: every family's main metric broken down by the values of the `metadata` keys a team names
(HOLISTIC_SEGMENT_KEYS), with no code in any family.

A worker splits a batch into the parts whose predictions share one cell per segment key, runs the family's
own `compute` once per part (each prediction is computed once: a family's statistics of any split of a
batch merge to those of the whole, its contract), and stores each key's cells' statistics beside the whole's
under fields "#seg|<key>|<cell>|<field>". The profile folds each cell with the family's own `fold` and keeps
its main metric, with the interval the fold gives it. Rows of per-instance state (holistic/stats/instances.py) are
joined across batches, not per cell: each part's rows tag their instances with the part's cells (Partial.cells),
the instance's state keeps them (per key the least, so any order gives one cell), and its joined contribution is
added under its cells' fields as well as the whole's.

Bounded: a key's cells are its first HOLISTIC_SEGMENT_TOP_K values per model, first come first admitted
(segment_admit.lua), and one `other` cell for every later value and every value longer than
HOLISTIC_SEGMENT_VALUE_MAX_CHARS. First come rather than a heavy-hitter sketch: a cell's statistics must be
exact and mergeable for its interval, and a value that moved between its own cell and `other` as a sketch's
counts shifted would split its predictions between two cells. The admitted set only grows, so every family
and replica puts a prediction in the same cell. A prediction without the key is in none of its cells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from holistic.families import Family, FamilyFold, Partial, as_partial, exported_metrics
from holistic.stats.instance_state import join_cells
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.names import SEGMENT_PREFIX, SEP, Fields
from holistic.v1 import profile_pb2 as pp

if TYPE_CHECKING:
    import redis

    from holistic.queue.v1.envelope_pb2 import BatchEnvelope
    from holistic.redis.keys import Keys
    from holistic.settings import Settings

PREFIX = SEGMENT_PREFIX  # the core's part: family folds never see these fields (split() takes them off)
OTHER = "*"  # the cell of values past the first K; an admitted value's cell is "=" + its escaped text
OTHER_LABEL = "other"

# segment key -> the distinct values asked for, in order -> the admitted ones
Admit = Callable[[Mapping[str, list[str]]], Mapping[str, set[str]]]


def cell_part(value: str) -> str:
    """An admitted value as one field part: SEP and "%" escaped, so the value may hold anything."""
    return "=" + value.replace("%", "%25").replace(SEP, "%7C")


def cell_value(part: str) -> str | None:
    """The value of a cell part; None for the `other` cell."""
    if part == OTHER:
        return None
    return part[1:].replace("%7C", SEP).replace("%25", "%")


def compute(family: Family, envelope: BatchEnvelope, settings: Settings, admit: Admit) -> dict[int, Stats] | Partial:
    """The family's statistics of the batch, and each segment cell's under "#seg|<key>|<cell>|"."""
    keys = settings.segment_keys
    if not keys:
        return family.compute(envelope, settings)
    longest = settings.segment_value_max_chars
    raw: list[tuple[str | None, ...]] = []
    asked: dict[str, dict[str, None]] = {k: {} for k in keys}
    for p in envelope.predictions:
        values = tuple(p.metadata.get(k) or None for k in keys)
        raw.append(values)
        for k, v in zip(keys, values, strict=True):
            if v is not None and len(v) <= longest:
                asked[k][v] = None
    if all(v is None for row in raw for v in row):
        return family.compute(envelope, settings)
    admitted = admit({k: list(vs) for k, vs in asked.items() if vs})
    parts: dict[tuple[str | None, ...], list[int]] = {}
    for i, values in enumerate(raw):
        cells = tuple(
            None if v is None else cell_part(v) if v in admitted.get(k, ()) else OTHER
            for k, v in zip(keys, values, strict=True)
        )
        parts.setdefault(cells, []).append(i)
    total: dict[int, Stats] = {}
    joined: Partial | None = None
    by_cell: dict[tuple[str, str], dict[int, Stats]] = {}
    for cells, idx in parts.items():
        sub = envelope if len(parts) == 1 else _subset(envelope, idx)
        by_minute, partial = as_partial(family.compute(sub, settings))
        if partial is not None:
            tagged = {k: cell for k, cell in zip(keys, cells, strict=True) if cell is not None}
            if tagged:  # each instance its rows touch is in these cells (the least per key, if its rows differ)
                for instance in {r[0] for r in partial.rows}:
                    join_cells(partial.cells.setdefault(instance, {}), tagged)
            joined = joined or Partial(total, partial.spec)
            joined.join(partial)
        for minute, st in by_minute.items():
            for k, cell in zip(keys, cells, strict=True):
                if cell is not None:
                    by_cell.setdefault((k, cell), {}).setdefault(minute, Stats()).merge(st)
            total.setdefault(minute, Stats()).merge(st)
    for (k, cell), minutes in by_cell.items():
        for minute, st in minutes.items():
            _merge_prefixed(total.setdefault(minute, Stats()), st, f"{PREFIX}{k}{SEP}{cell}{SEP}")
    return joined if joined is not None else total


def _subset(envelope: BatchEnvelope, idx: Iterable[int]) -> BatchEnvelope:
    sub = type(envelope)()
    sub.CopyFrom(envelope)
    del sub.predictions[:]
    sub.predictions.extend(envelope.predictions[i] for i in idx)
    return sub


def _merge_prefixed(into: Stats, st: Stats, prefix: str) -> None:
    """st's fields under prefix, merged into `into` (a field's merge rule is its suffix: kept)."""
    shifted = Stats()
    shifted.ints = {prefix + f: n for f, n in st.ints.items()}
    shifted.floats = {prefix + f: v for f, v in st.floats.items()}
    shifted.mins = {prefix + f: v for f, v in st.mins.items()}
    shifted.maxes = {prefix + f: v for f, v in st.maxes.items()}
    shifted.hists = {prefix + f: dict(b) for f, b in st.hists.items()}
    shifted.caps = {prefix + f: c for f, c in st.caps.items()}
    into.merge(shifted)


class Admission:
    """A worker's view of the admitted values: asks Redis only about values it has not seen admitted while
    the key has room (the set only grows; `forget` after the model's deletion)."""

    def __init__(self, client: redis.Redis, keys: Keys, top_k: int) -> None:
        from holistic.redis.scripts import Scripts

        self.script = Scripts(client).segment_admit
        self.keys = keys
        self.top_k = top_k
        self._known: dict[tuple[str, str], tuple[set[str], bool]] = {}  # (model, key) -> admitted, full

    def admitter(self, model: str) -> Admit:
        return lambda asked: self.admit(model, asked)

    def admit(self, model: str, asked: Mapping[str, list[str]]) -> dict[str, set[str]]:
        unknown = {}
        for k, values in asked.items():
            known, full = self._known.get((model, k), (set(), False))
            new = [v for v in values if v not in known]
            if new and not full:
                unknown[k] = new
        if unknown:
            args: list[str | int] = [self.top_k]
            for values in unknown.values():
                args += [len(values), *values]
            reply = self.script(keys=[self.keys.segment_values(model, k) for k in unknown], args=args)
            for k, got in zip(unknown, reply, strict=True):
                known, _ = self._known.get((model, k), (set(), False))
                known |= {v.decode() if isinstance(v, bytes) else v for v in got}
                # every value it did not admit was refused for want of room: the set is full for good
                self._known[(model, k)] = (known, len(got) < len(unknown[k]) or len(known) >= self.top_k)
        return {k: self._known.get((model, k), (set(), False))[0] for k in asked}

    def forget(self, model: str) -> None:
        self._known = {mk: v for mk, v in self._known.items() if mk[0] != model}


# --- the fold ---------------------------------------------------------------------------------------


def split(stats: Folded) -> tuple[Folded, Fields]:
    """A family's own fields, and its segment fields with "#seg|" cut off."""
    if not any(f.startswith(PREFIX) for f in stats):
        return stats, Fields()
    n = len(PREFIX)
    own = {f: v for f, v in stats.items() if not f.startswith(PREFIX)}
    return Folded(own), Fields({f[n:]: v for f, v in stats.items() if f.startswith(PREFIX)})


def main_metric(family: Family, fold: FamilyFold) -> str:
    """The metric a family's segments show: its first exported metric (holistic/families/__init__.py) its fold of the
    whole window reports, else its axis's score; "" when it has neither."""
    for name in exported_metrics(family):
        if find(fold, name) is not None:
            return name
    for d in fold.dimensions:
        if d.HasField("score"):
            return d.axis or (family.axis.name if family.axis is not None else "")
    return ""


def find(fold: FamilyFold, name: str) -> pp.Metric | None:
    """The metric `name` of a fold: in its report, else in its dimensions, else a dimension's score."""
    for m in fold.report.metrics:
        if m.name == name:
            return m
    for d in fold.dimensions:
        for m in d.metrics:
            if m.name == name:
                return m
    for d in fold.dimensions:
        if d.axis == name and d.HasField("score"):
            m = pp.Metric(name=name, family=fold.report.family, value=d.score, count=d.count)
            if d.HasField("interval"):  # an axis without one (a corpus-level score) stays without: not [0, 0]
                m.interval.CopyFrom(d.interval)
            return m
    return None


def cell_prefix(key: str, part: str) -> str:
    """Where a segment cell's fields ride in a family's stored statistics: "#seg|<key>|<cell>|"."""
    return f"{PREFIX}{key}{SEP}{part}{SEP}"


def part_of(v: pp.SegmentValue) -> str:
    """A shown segment value's cell part (the inverse of cell_value)."""
    return OTHER if v.other else cell_part(v.value)


def cell_metric(family: Family, cell: Folded, metric: str, model: str, settings: Settings) -> pp.Metric | None:
    """A segment cell's metric: the family's own fold of the cell's statistics (what the profile shows, and
    what a bootstrap draw of the cell's buckets gives, holistic/compare/bootstrap.py)."""
    return find(family.fold(cell, model, settings), metric)


def breakdowns(
    family: Family, whole: FamilyFold, fields: Fields, model: str, settings: Settings
) -> list[pp.SegmentBreakdown]:
    """Per segment key, the family's main metric per cell: values by count, `other` last."""
    if not fields:
        return []
    metric = main_metric(family, whole)
    if not metric:
        return []
    ref = find(whole, metric)
    out = []
    for key, cells in sorted(fields.groups().items()):
        b = pp.SegmentBreakdown(
            key=key, family=family.name, metric=metric, lower_is_better=bool(ref and ref.lower_is_better)
        )
        values = []
        for part, cell in cells.groups().items():
            m = cell_metric(family, Folded(dict(cell)), metric, model, settings)
            if m is None:
                continue
            value = cell_value(part)
            sv = pp.SegmentValue(value=OTHER_LABEL if value is None else value, other=value is None)
            sv.metric.CopyFrom(m)
            values.append(sv)
        if values:  # none when no cell's predictions give the metric (e.g. only the whole has a perturbation pair)
            values.sort(key=lambda v: (v.other, -v.metric.count, v.value))
            b.values.extend(values)
            out.append(b)
    return out
