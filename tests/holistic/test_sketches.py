"""holistic/stats/sketches.py: the quantile sketch any family uses, against exact order statistics and ddsketch."""

from __future__ import annotations

import math
import random

import pytest

from holistic.stats import sketches as sk
from holistic.stats.mergeable import Folded, Stats


def _folded(*batches: list[float]) -> Folded:
    total = Stats()
    for values in batches:
        st = Stats()
        sk.emit_sketch(st, "x", values)
        total.merge(st)
    return Folded.from_stats(total)


def test_quantiles_are_within_the_relative_accuracy_of_the_exact_order_statistic():
    rng = random.Random(3)
    values = [rng.lognormvariate(0, 1) for _ in range(10_001)]
    metrics = {
        m.name: m for m in sk.quantile_metrics(_folded(values).scope("x"), "v", family="f", quantiles=(0.5, 0.95))
    }
    ordered = sorted(values)
    for q in (0.5, 0.95):
        exact = ordered[round(q * (len(ordered) - 1))]
        got = metrics[f"v_p{round(q * 100)}"]
        assert got.value == pytest.approx(exact, rel=sk.RELATIVE_ACCURACY * 1.01)
        assert got.interval.lower <= got.value <= got.interval.upper
        assert got.count == len(values)
    assert metrics["v_mean"].value == pytest.approx(math.fsum(values) / len(values), rel=1e-12)


def test_any_split_into_batches_gives_the_same_sketch():
    rng = random.Random(4)
    values = [rng.expovariate(2.0) for _ in range(3000)]
    one = _folded(values)
    split = _folded(values[:17], values[17:1000], values[1000:])
    assert {k: v for k, v in one.items() if not k.endswith("sum") and not k.endswith("sumsq")} == {
        k: v for k, v in split.items() if not k.endswith("sum") and not k.endswith("sumsq")
    }
    a = sk.quantile_metrics(one.scope("x"), "v", family="f")
    b = sk.quantile_metrics(split.scope("x"), "v", family="f")
    assert [m.value for m in a[1:]] == [m.value for m in b[1:]]


def test_hand_worked_p50_and_count_at_most():
    """1, 2, 3, 4 and a zero: the median is the bin of 2 (within 1 %), three values at or below 2.5."""
    f = _folded([0.0, 1.0, 2.0, 3.0, 4.0]).scope("x")
    assert f.num("z") == 1 and f.num("n") == 5 and f.num("sum") == 10.0 and f.num("sumsq") == 30.0
    p50 = next(m for m in sk.quantile_metrics(f, "v", family="f", quantiles=(0.5,)) if m.name == "v_p50")
    assert p50.value == pytest.approx(2.0, rel=0.01)
    assert sk.count_at_most(f, 2.5) == (3.0, 5.0)
    assert sk.count_at_most(Folded().scope("x"), 1.0) is None
    assert sk.quantile_metrics(Folded().scope("x"), "v", family="f") == []


def test_inlined_sketch_keys_equal_ddsketch_mapping_key() -> None:
    """The inlined key equals ddsketch's LogarithmicMapping.key on bin edges (gamma^k and the
    floats around it, where a log computed otherwise, log2 say, crosses an edge ddsketch's does not),
    the smallest bin, and values across the range a latency takes."""
    import math
    import random

    from holistic.stats import sketches as sk

    mapping = sk.MAPPING
    rng = random.Random(7)
    values = [rng.lognormvariate(0, 3) for _ in range(20_000)] + [rng.uniform(0, 5) for _ in range(5_000)]
    for k in range(-1000, 1001):  # each bin edge and the 40 floats either side of it
        v = mapping.gamma**k
        for _ in range(40):
            v = math.nextafter(v, 0)
        for _ in range(81):
            values.append(v)
            v = math.nextafter(v, math.inf)
    smallest = mapping.min_possible
    values += [0.0, smallest, math.nextafter(smallest, math.inf), 1e-300, 1.0, 2.0, 1e9, 5e-324]
    expected = [mapping.key(v) if v > smallest else None for v in values]
    assert sk.bin_keys(values) == expected
    assert len(set(expected)) > 500  # the values span many bins
    assert [sk._bin(k) for k in sk.bin_keys([0.0, 1.0, 2.0])] == ["z", f"k:{mapping.key(1.0)}", f"k:{mapping.key(2.0)}"]
