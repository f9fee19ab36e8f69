"""Mergeable statistics: flat field -> number maps that add (or min/max) in any order.

A family turns a batch into Stats; apply.lua merges them into Redis hashes (each hash read with one
HMGET, summed in doubles, written back with one HSET, 17 significant digits so a sum reads back bit
for bit), and reading a window merges hashes the same way. A field's merge rule is part of its name:
fields ending in "|min" keep the minimum, "|max" the maximum, every other field adds. So any split
of the stream into batches, in any order, folds to the same numbers (up to float addition order).

Histograms (sketch bins) are a field "<name>|hist" holding a merged base, a JSON object of bin ->
count, and each apply's bins since, as they came, in fields "<name>|hist+1", "+2", ... (with their
count and sizes in "<name>|hist#"), merged into a new base by apply.lua once they are four times as
long as it, or 64 of them (a few fields per histogram instead of one per bin, which was most of
Redis's work; an apply costs its own bins, not the history's). Read back, base and chunks are summed
and bin b of histogram <name> appears as the field "<name>|<b>". A capped histogram
(bump(..., cap=N)) has a first line "#N"; it turns into the marker "over" once it holds more than N
bins, and stays so: whatever the order of merges, it is over exactly when the union has more than N
bins. Read back, an over histogram appears as the field "<name>|over" = 1 and no bins. A field
written before the chunk fields (its base with lines appended to it) reads the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from holistic.stats.names import SEP, Fields, key

MIN_SUFFIX = SEP + "min"
MAX_SUFFIX = SEP + "max"
HIST_SUFFIX = SEP + "hist"
HIST_PART = HIST_SUFFIX + "+"  # "<name>|hist+<k>": the k-th apply's bins since the base (apply.lua)
HIST_META = HIST_SUFFIX + "#"  # "<name>|hist#": apply.lua's count and sizes of the chunks
OVER = "over"
# The core's own fields beside a family's: predictions applied per signature id (holistic/families/signature.py).
SIGNATURE_PREFIX = "#sig" + SEP


def signature_field(signature_id: str) -> str:
    return SIGNATURE_PREFIX + signature_id


def merge_rule(field: str) -> str:
    """ "<" for min fields, ">" for max fields, "+" for additive ones."""
    if field.endswith(MIN_SUFFIX):
        return "<"
    if field.endswith(MAX_SUFFIX):
        return ">"
    return "+"


class Stats:
    """Additive counters and sums, plus min/max fields, keyed by field name."""

    __slots__ = ("caps", "floats", "hists", "ints", "maxes", "mins")

    def __init__(self) -> None:
        self.ints: dict[str, int] = {}
        self.floats: dict[str, float] = {}
        self.mins: dict[str, float] = {}
        self.maxes: dict[str, float] = {}
        self.hists: dict[str, dict[str, float]] = {}
        self.caps: dict[str, int] = {}

    def bump(self, name: str, bin_: str, n: float = 1, cap: int | None = None) -> None:
        """Count n into bin bin_ of histogram name (capped at `cap` bins when given)."""
        field = name + HIST_SUFFIX
        hist = self.hists.setdefault(field, {})
        hist[bin_] = hist.get(bin_, 0) + n
        if cap is not None:
            self.caps[field] = cap

    def incr(self, field: str, n: int = 1) -> None:
        self.ints[field] = self.ints.get(field, 0) + n

    def add(self, field: str, value: float) -> None:
        self.floats[field] = self.floats.get(field, 0.0) + value

    def add_moments(self, field: str, value: float) -> None:
        """Count, sum and sum of squares: what a mean and its interval need."""
        n, total, sumsq = key(field, "n"), key(field, "sum"), key(field, "sumsq")
        self.ints[n] = self.ints.get(n, 0) + 1
        self.floats[total] = self.floats.get(total, 0.0) + value
        self.floats[sumsq] = self.floats.get(sumsq, 0.0) + value * value

    def low(self, name: str, value: float) -> None:
        field = name + MIN_SUFFIX
        current = self.mins.get(field)
        if current is None or value < current:
            self.mins[field] = value

    def high(self, name: str, value: float) -> None:
        field = name + MAX_SUFFIX
        current = self.maxes.get(field)
        if current is None or value > current:
            self.maxes[field] = value

    def merge(self, other: Stats) -> Stats:
        for f, n in other.ints.items():
            self.ints[f] = self.ints.get(f, 0) + n
        for f, v in other.floats.items():
            self.floats[f] = self.floats.get(f, 0.0) + v
        for f, v in other.mins.items():
            if f not in self.mins or v < self.mins[f]:
                self.mins[f] = v
        for f, v in other.maxes.items():
            if f not in self.maxes or v > self.maxes[f]:
                self.maxes[f] = v
        for f, bins in other.hists.items():
            mine = self.hists.setdefault(f, {})
            for b, n in bins.items():
                mine[b] = mine.get(b, 0) + n
        self.caps.update(other.caps)
        return self

    def __bool__(self) -> bool:
        return bool(self.ints or self.floats or self.mins or self.maxes or self.hists)

    def __len__(self) -> int:
        return len(self.ints) + len(self.floats) + len(self.mins) + len(self.maxes) + len(self.hists)

    def lua_ops(self) -> list[str | int | float]:
        """Flatten to apply.lua's (op, field, value) triples."""
        out: list[str | int | float] = []
        for f, n in self.ints.items():
            out += ("i", f, n)
        for f, v in self.floats.items():
            out += ("f", f, repr(v))
        for f, v in self.mins.items():
            out += ("<", f, repr(v))
        for f, v in self.maxes.items():
            out += (">", f, repr(v))
        for f, bins in self.hists.items():
            text = json.dumps(bins, separators=(",", ":"))
            cap = self.caps.get(f)
            out += ("h", f, text) if cap is None else ("H", f, f"{cap} {text}")
        return out


class Folded(Fields):
    """Merged statistics as read back: a read-only field -> value map, read by parts (stat_keys.py)."""

    __slots__ = ()

    def __init__(self, values: dict[str, float] | None = None) -> None:
        super().__init__(values or {})

    @classmethod
    def from_hashes(cls, hashes: Iterable[Mapping[bytes | str, bytes | str]]) -> Folded:
        out: dict[str, float] = {}
        for h in hashes:
            hists: dict[str, list[tuple[int, str]]] = {}  # histogram field -> (0: base, k: chunk k) texts
            for raw_field, raw_value in h.items():
                field = raw_field.decode() if isinstance(raw_field, bytes) else raw_field
                if field.endswith(HIST_SUFFIX):
                    hists.setdefault(field, []).append((0, _text(raw_value)))
                    continue
                if HIST_PART in field:
                    name, _, k = field.rpartition(HIST_PART)
                    hists.setdefault(name + HIST_SUFFIX, []).append((int(k), _text(raw_value)))
                    continue
                if field.endswith(HIST_META):
                    continue
                value = float(raw_value)
                rule = merge_rule(field)
                if field not in out:
                    out[field] = value
                elif rule == "+":
                    out[field] += value
                elif rule == "<":
                    out[field] = min(out[field], value)
                else:
                    out[field] = max(out[field], value)
            for field, parts in hists.items():
                parts.sort()  # the base first, then the chunks in the order they came
                bins = None if parts[0] == (0, OVER) else _stored_bins("\n".join(text for _, text in parts))
                if bins is None:
                    out[key(field[: -len(HIST_SUFFIX)], OVER)] = 1.0
                else:
                    _add_bins(out, field, bins)
        return cls(out)

    @classmethod
    def from_stats(cls, stats: Stats) -> Folded:
        values: dict[str, float] = {f: float(n) for f, n in stats.ints.items()}
        values.update(stats.floats)
        values.update(stats.mins)
        values.update(stats.maxes)
        for field, bins in stats.hists.items():
            if field in stats.caps and len(bins) > stats.caps[field]:
                values[key(field[: -len(HIST_SUFFIX)], OVER)] = 1.0
            else:
                _add_bins(values, field, bins)
        return cls(values)

    def with_prefix(self, prefix: str) -> dict[str, float]:
        """Fields under prefix, with the prefix cut off."""
        n = len(prefix)
        return {k[n:]: v for k, v in self._v.items() if k.startswith(prefix)}

    def split_signatures(self) -> tuple[Folded, dict[str, float]]:
        """The family's own fields, and the predictions counted per signature id."""
        n = len(SIGNATURE_PREFIX)
        own = {k: v for k, v in self._v.items() if not k.startswith(SIGNATURE_PREFIX)}
        if len(own) == len(self._v):
            return self, {}
        return Folded(own), {k[n:]: v for k, v in self._v.items() if k.startswith(SIGNATURE_PREFIX)}


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _stored_bins(text: str) -> dict[str, float] | None:
    """A histogram field's bins, its lines summed in order (apply.lua); None when a capped one holds
    more bins than its cap (over, though not merged into the marker yet)."""
    cap = None
    if text.startswith("#"):
        head, _, text = text.partition("\n")
        cap = int(head[1:])
    if "\n" not in text:
        bins: dict[str, float] = json.loads(text)
    else:
        base, *lines = text.split("\n")
        bins = json.loads(base)  # the lines added into the base's own dict: its bins are not copied one by one
        for line in lines:
            for b, n in json.loads(line).items():
                bins[b] = bins.get(b, 0) + n
    return None if cap is not None and len(bins) > cap else bins


def _add_bins(out: dict[str, float], field: str, bins: Mapping[str, float]) -> None:
    base = field[: -len(HIST_SUFFIX)]
    for b, n in bins.items():
        name = key(base, b)
        out[name] = out.get(name, 0.0) + float(n)
