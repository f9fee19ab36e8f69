"""Paired tests of the same instances scored by two versions, and Benjamini-Hochberg's adjustment
(holistic/compare/significance.py): hand-worked and reference values, and the paired gate's false-alarm rate
and power simulated (figures printed: pytest -s)."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import binomtest, false_discovery_control, norm, ttest_rel

from holistic.compare.margin import margin_p
from holistic.compare.significance import (
    LEVEL,
    MCNEMAR_EXACT,
    MCNEMAR_Z,
    PAIRED_Z,
    Z95,
    benjamini_hochberg,
    mcnemar,
    paired_mean,
)

REPS = 1000
NOMINAL_CEILING = LEVEL + 3 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)  # 0.0707


def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs():
    # 12 instances right before and wrong after, 3 the reverse, 60 right and 25 wrong in both: n = 100
    t = mcnemar(only_before=12, only_after=3, both=60, neither=25)
    assert t is not None and t.method == MCNEMAR_EXACT and t.difference == pytest.approx(-0.09)
    assert t.p == pytest.approx(binomtest(3, 15, 0.5).pvalue, rel=1e-12)  # 0.03516
    assert round(t.p, 5) == 0.03516
    # Agresti-Min: 12.5 and 3.5 of n + 2 = 102: centre -9/102, variance (16 - 81/102) / 102^2
    centre, half = -9 / 102, Z95 * math.sqrt((16 - 81 / 102) / 102**2)
    assert (t.lower, t.upper) == pytest.approx((centre - half, centre + half))
    assert round(t.lower, 4) == -0.1632 and round(t.upper, 4) == -0.0133


def test_mcnemar_without_discordant_pairs_and_past_the_exact_range():
    same = mcnemar(0, 0, 40, 10)
    assert same is not None and same.p == 1.0 and same.difference == 0.0 and same.lower < 0 < same.upper
    big = mcnemar(only_before=600, only_after=520, both=3000, neither=880)
    assert big is not None and big.method == MCNEMAR_Z
    assert big.p == pytest.approx(math.erfc(80 / math.sqrt(1120) / math.sqrt(2)))
    assert mcnemar(0, 0, 0, 0) is None


def test_paired_mean_is_the_paired_t_statistic_on_the_normal():
    rng = random.Random(5)
    before = [rng.gauss(0.3, 0.1) for _ in range(400)]
    after = [b + rng.gauss(0.01, 0.05) for b in before]
    t = paired_mean([a - b for a, b in zip(after, before, strict=True)])
    assert t is not None and t.method == PAIRED_Z
    ref = ttest_rel(after, before)
    assert (t.difference / ((t.upper - t.lower) / (2 * Z95))) == pytest.approx(ref.statistic)
    assert t.p == pytest.approx(2 * norm.sf(abs(ref.statistic)))  # the z form; t's is 0.0102 on 399 df
    assert paired_mean([0.5]) is None


def test_benjamini_hochberg_matches_scipy():
    ps = [0.01, 0.04, 0.03, 0.2, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04, 0.2 times 5/1..5/5: 0.025, 0.025, 0.05, 0.05, 0.2
    assert benjamini_hochberg(ps) == pytest.approx([0.025, 0.05, 0.05, 0.2, 0.025])
    assert benjamini_hochberg(ps) == pytest.approx(list(false_discovery_control(ps)))
    assert benjamini_hochberg([]) == []


def paired_rate(p_before: float, p_after: float, seed: int, n: int = 300, agree: float = 0.8) -> float:
    """Share of REPS pairs of versions scoring the same n instances where the paired test calls the
    second significantly worse: each instance's outcomes agree with probability `agree`-ish (a common
    difficulty), so pairing has something to gain."""
    rng = random.Random(seed)
    alarms = 0
    for _ in range(REPS):
        cells = [0, 0, 0, 0]  # only before, only after, both, neither
        for _ in range(n):
            hard = rng.random()
            b = hard < p_before if rng.random() < agree else rng.random() < p_before
            a = hard < p_after if rng.random() < agree else rng.random() < p_after
            cells[(0 if b else 1) if a != b else (2 if a else 3)] += 1
        t = mcnemar(*cells)
        alarms += t is not None and (margin_p(t, +1, 0.0) or 1.0) < LEVEL
    return alarms / REPS


def test_the_paired_gate_on_equal_versions_stays_within_its_level():
    rate = paired_rate(0.7, 0.7, seed=21)
    print(f"paired 0/1, equal versions, 300 instances: failed {rate:.1%} of {REPS} (ceiling {NOMINAL_CEILING:.1%})")
    assert rate <= NOMINAL_CEILING


def test_the_paired_gate_detects_a_known_drop():
    rate = paired_rate(0.7, 0.63, seed=22)
    print(f"paired 0/1, 0.70 -> 0.63 on the same 300 instances: the gate failed {rate:.1%} of {REPS} (power)")
    assert rate >= 0.5
