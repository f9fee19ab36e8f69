"""Mergeable quantile sketches for any family: percentiles within 1 % from counts that add in Redis.

DDSketch (DataDog's `ddsketch`, logarithmic mapping): each positive value lands in bin
ceil(log_gamma(v)), gamma = (1 + a) / (1 - a) with a = RELATIVE_ACCURACY, so every reported quantile is
within 1 % of the exact order statistic of the data, whatever the batching. A sketch under a prefix is
stored as plain Stats fields: bins "<prefix>|k:<key>" (values at or below the smallest bin in
"<prefix>|z") and the moments "<prefix>|n", "|sum", "|sumsq"; bin counts add, so they merge with HINCRBY.
The relative accuracy is part of a stored sketch's meaning: a family that changes it changes its version.

    emit_sketch(st, "lat", values)                       # compute: a batch's values
    quantile_metrics(stats.scope("lat"), "latency", family="mine", quantiles=(0.5, 0.95))   # fold
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from ddsketch.ddsketch import BaseDDSketch
from ddsketch.mapping import LogarithmicMapping
from ddsketch.store import DenseStore

from holistic.stats.mergeable import Stats
from holistic.stats.metric_values import mean, plain, with_interval
from holistic.stats.names import Fields, key
from holistic.v1.profile_pb2 import Metric

RELATIVE_ACCURACY = 0.01
MAPPING = LogarithmicMapping(RELATIVE_ACCURACY)
BIN = "k:"  # a bin "k:<DDSketch key>"
ZERO = "z"  # the values at (or below) the smallest bin
Z95 = 1.959963984540054

# LogarithmicMapping.key(v) is int(ceil(log(v, 2) * multiplier) + offset), and CPython's log(v, 2) is
# log(v) / log(2.0): inlined below, the same float operations in the same order
# (tests/holistic/test_sketches.py holds the two equal)
_MULTIPLIER, _OFFSET, _SMALLEST = MAPPING._multiplier, MAPPING._offset, MAPPING.min_possible
_LN2 = math.log(2.0)


def bin_keys(values: Sequence[float]) -> list[int | None]:
    """Each value's DDSketch key, None at (or below) the smallest bin: three Python calls a value less
    than MAPPING.key, and a bin's name made once per bin, not per value (emit_sketch)."""
    log, ceil = math.log, math.ceil
    return [int(ceil(log(v) / _LN2 * _MULTIPLIER) + _OFFSET) if v > _SMALLEST else None for v in values]


def _bin(key_: int | None) -> str:
    return ZERO if key_ is None else f"{BIN}{key_}"


def emit_moments(st: Stats, prefix: str, values: Sequence[float]) -> None:
    """n, sum and sum of squares under `prefix`: a mean with its interval (metric_values.mean)."""
    st.incr(key(prefix, "n"), len(values))
    st.add(key(prefix, "sum"), math.fsum(values))
    st.add(key(prefix, "sumsq"), math.fsum(v * v for v in values))


def emit_sketch(st: Stats, prefix: str, values: Sequence[float], keys: Sequence[int | None] | None = None) -> None:
    """A batch's values as a sketch under `prefix` (pass `keys` from bin_keys to share them between sketches)."""
    for key_, count in Counter(bin_keys(values) if keys is None else keys).items():
        st.bump(prefix, _bin(key_), count)
    emit_moments(st, prefix, values)


def _bins(fields: Fields) -> Iterable[tuple[int, float]]:
    for k, v in fields.marked(BIN).items():
        yield int(k), v


def sketch_from(fields: Fields) -> BaseDDSketch:
    """The DDSketch of merged bin counts (`fields`: the sketch's scope, e.g. `stats.scope("lat")`)."""
    store = DenseStore()
    for bin_, count in _bins(fields):
        store.add(bin_, count)
    return BaseDDSketch(MAPPING, store, DenseStore(), fields.num(ZERO))


def quantile_bounds(sketch: BaseDDSketch, q: float, n: float) -> tuple[float, float]:
    """Distribution-free 95 % interval for a quantile: the sketch's values at ranks n*q -/+ 1.96 sd."""
    half = Z95 * math.sqrt(n * q * (1 - q))
    lo_q = max(0.0, (n * q - half) / n)
    hi_q = min(1.0, (n * q + half) / n)
    return float(sketch.get_quantile_value(lo_q)), float(sketch.get_quantile_value(hi_q))


def quantile_metrics(
    fields: Fields,
    label: str,
    *,
    family: str,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
    unit: str = "",
    lower_is_better: bool = False,
) -> list[Metric]:
    """`<label>_mean` and `<label>_p<100 q>` for each quantile, each with its 95 % interval; [] when empty."""
    n = fields.get("n", 0.0)
    if not n:
        return []
    sketch = sketch_from(fields)
    out = [mean(f"{label}_mean", family, n, fields["sum"], fields.get("sumsq", 0.0), unit=unit,
                lower_is_better=lower_is_better)]  # fmt: skip
    for q in quantiles:
        value = sketch.get_quantile_value(q)
        m = plain(f"{label}_p{round(q * 100)}", family, float(value), n, unit=unit, lower_is_better=lower_is_better)
        lo, hi = quantile_bounds(sketch, q, n)
        out.append(with_interval(m, lo, hi, "order-statistic"))
    return out


def count_at_most(fields: Fields, threshold: float) -> tuple[float, float] | None:
    """(values at or below `threshold`, all values) read from the bins, None when empty; only values within
    RELATIVE_ACCURACY of the threshold can be counted on the wrong side."""
    n = fields.get("n", 0.0)
    if not n:
        return None
    ok = fields.num(ZERO) + sum(c for b, c in _bins(fields) if MAPPING.value(b) <= threshold)
    return ok, n
