"""Significance between two windows or versions (holistic/compare/significance.py): hand-worked tests,
Holm's adjustment, and the gate's false-alarm rate and power simulated (figures printed: pytest -s)."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import chi2_contingency

from holistic.compare.profiles import compare
from holistic.compare.significance import Z95, difference, holm
from holistic.stats.metric_values import mean, proportion
from holistic.v1 import profile_pb2 as pp
from holistic_client.compare_cli import regressions

REPS = 1000
# A 5 % test is wrong in 50 of 1,000 equal pairs on average; 3 binomial standard deviations above that:
NOMINAL_CEILING = 0.05 + 3 * math.sqrt(0.05 * 0.95 / REPS)  # 0.0707


def test_two_shares_newcombe_interval_and_the_pooled_z_test():
    before, after = proportion("exact_match", "accuracy", 40, 40), proportion("exact_match", "accuracy", 20, 40)
    t = difference(before, after)
    assert t is not None and t.method == "Newcombe/two-proportion z" and t.difference == -0.5
    # Newcombe (1998) method 10 from the Wilson bounds: 40/40 is (0.91238, 1), 20/40 is (0.351995, 0.648005)
    (bl, bu), (al, au) = (before.interval.lower, before.interval.upper), (after.interval.lower, after.interval.upper)
    assert (round(bl, 5), bu, round(al, 6), round(au, 6)) == (0.91238, 1.0, 0.351995, 0.648005)
    assert t.lower == pytest.approx(-0.5 - math.hypot(0.5 - al, bu - 1.0))  # -0.648005
    assert t.upper == pytest.approx(-0.5 + math.hypot(au - 0.5, 1.0 - bl))  # -0.328003
    assert round(t.lower, 5) == -0.648 and round(t.upper, 5) == -0.328
    # the pooled two-proportion z test is the uncorrected chi-square test of the 2x2 table
    reference = chi2_contingency([[40, 0], [20, 20]], correction=False).pvalue
    assert t.p == pytest.approx(reference, rel=1e-9)


def test_two_means_welch_from_their_intervals():
    before = mean("latency_mean", "efficiency", 100, 50.0, 30.0)  # mean 0.5, variance of the mean 0.0005
    after = mean("latency_mean", "efficiency", 100, 60.0, 40.0)  # mean 0.6, 0.0004
    t = difference(before, after)
    assert t is not None and t.method == "Welch z"
    se = math.sqrt((30 / 100 - 0.25) / 99 + (40 / 100 - 0.36) / 99)  # sample variances over n - 1, per mean
    assert t.difference == pytest.approx(0.1) and t.upper - t.lower == pytest.approx(2 * Z95 * se, rel=1e-9)
    assert t.p == pytest.approx(math.erfc(0.1 / se / math.sqrt(2)), rel=1e-9)


def test_no_test_without_a_count_or_an_interval():
    assert difference(pp.Metric(value=0.5, count=10), proportion("x", "f", 5, 10)) is None
    assert difference(pp.Dimension(count=3), pp.Dimension(score=0.5, count=3)) is None


def test_holm_step_down():
    # sorted 0.01, 0.02, 0.04 over m = 3: 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.04) = 0.04
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


def profile(rng: random.Random, n: int, shares: dict[str, float], latency: float) -> pp.Profile:
    """Two families' cells drawn at random: 0/1 outcomes at `shares`, and latencies with mean `latency`."""
    p = pp.Profile(model="m")
    fam = p.families.add(family="accuracy")
    for name, share in shares.items():
        fam.metrics.append(proportion(name, "accuracy", sum(rng.random() < share for _ in range(n)), n))
    values = [rng.expovariate(1 / latency) for _ in range(n)]
    eff = p.families.add(family="efficiency")
    eff.metrics.append(mean("latency_mean", "efficiency", n, sum(values), sum(v * v for v in values),
                            lower_is_better=True))  # fmt: skip
    return p


SHARES = {"exact_match": 0.7, "quasi_exact_match": 0.75, "f1_score": 0.6, "toxic_free": 0.95}
CELLS = ["accuracy/" + name for name in SHARES] + ["efficiency/latency_mean"]


def gate_rate(before: dict[str, float], after: dict[str, float], seed: int, n: int = 200) -> float:
    """Share of REPS pairs of windows where `compare --fail-on <every cell>` would fail."""
    rng = random.Random(seed)
    failed = 0
    for _ in range(REPS):
        changes = compare(profile(rng, n, after, 1.0), profile(rng, n, before, 1.0))
        failed += bool(regressions(changes, CELLS))
    return failed / REPS


def test_the_gate_on_equal_versions_stays_within_its_level():
    rate = gate_rate(SHARES, SHARES, seed=11)
    print(f"equal versions, 5 cells, Holm: the gate failed {rate:.1%} of {REPS} pairs (ceiling {NOMINAL_CEILING:.1%})")
    assert rate <= NOMINAL_CEILING


def test_the_gate_detects_a_known_drop():
    dropped = {**SHARES, "exact_match": 0.6}  # 0.7 -> 0.6 on 200 predictions a window
    rate = gate_rate(SHARES, dropped, seed=12)
    # one-cell power without adjustment is about 0.56 (z = 0.1 / 0.0474); Holm over 5 cells costs some
    print(f"exact_match 0.7 -> 0.6, n = 200 a window: the gate failed {rate:.1%} of {REPS} pairs (power)")
    assert rate >= 0.3


def test_a_single_equal_cell_false_alarm_rate():
    rng = random.Random(13)
    alarms = 0
    for _ in range(REPS):
        a, b = (proportion("x", "f", sum(rng.random() < 0.7 for _ in range(200)), 200) for _ in range(2))
        t = difference(a, b)
        alarms += t is not None and t.p < 0.05
    print(f"one cell, two-proportion z at 5 %: {alarms / REPS:.1%} false alarms of {REPS}")
    assert alarms / REPS <= NOMINAL_CEILING
