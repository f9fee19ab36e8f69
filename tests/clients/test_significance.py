"""Significance between two windows or versions (holistic/compare/significance.py): hand-worked tests,
Holm's adjustment, and the gate's false-alarm rate and power simulated (figures printed: pytest -s)."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import chi2_contingency

from holistic.compare.margin import margin_p, standard_error, worse
from holistic.compare.profiles import compare
from holistic.compare.significance import HOLM, Z95, difference, holm, mcnemar
from holistic.compare.significance import Test as CellTest
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


def gate_rate(
    before: dict[str, float], after: dict[str, float], seed: int, n: int = 200, margin: float = 0.0,
    latency: tuple[float, float] = (1.0, 1.0), cells: list[str] = CELLS,
) -> float:  # fmt: skip
    """Share of REPS pairs of windows where `compare --fail-on <cells> --margin <margin>` would fail."""
    rng = random.Random(seed)
    failed = 0
    for _ in range(REPS):
        changes = compare(profile(rng, n, after, latency[1]), profile(rng, n, before, latency[0]))
        failed += bool(regressions(changes, cells, margin))
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


def test_the_margin_test_by_hand():
    """A Welch cell: d = -0.1 with se 0.04 (interval -0.1 +- 1.96 * 0.04, p = erfc(2.5 / sqrt 2) = 0.0124).
    Margin 0.02: H0 "worse by at most 0.02"; z = (-0.1 + 0.02) / 0.04 = -2, p = Phi(-2) = 0.02275. Lower is
    better mirrors it."""
    p = math.erfc(2.5 / math.sqrt(2))
    t = CellTest(-0.1, -0.1 - Z95 * 0.04, -0.1 + Z95 * 0.04, p, "Welch z")
    assert standard_error(t, +1) == pytest.approx(0.04)  # the se its p implies is its interval's
    assert margin_p(t, +1, 0.02) == pytest.approx(0.022750, abs=1e-6)
    assert margin_p(t, +1, 0.1) == pytest.approx(0.5)  # exactly at the margin
    assert margin_p(t, +1, 0.0) == pytest.approx(p / 2)  # margin 0: the cell's own test, one-sided
    assert margin_p(t, -1, 0.0) == pytest.approx(1 - p / 2)  # lower is better: d < 0 got better
    mirrored = CellTest(0.1, 0.1 - Z95 * 0.04, 0.1 + Z95 * 0.04, p, "Welch z")
    assert margin_p(mirrored, -1, 0.02) == pytest.approx(0.022750, abs=1e-6)
    assert margin_p(t, 0, 0.02) is None  # no direction, no margin test
    # A share: 40/40 -> 20/40, its test the pooled two-proportion z: pooled 60/80 = 0.75, se = sqrt(0.75 * 0.25 *
    # (1/40 + 1/40)) = 0.096825 (not the Newcombe interval's); margin 0.3: z = -0.2 / 0.096825 = -2.0656, p 0.019434
    nc = difference(proportion("exact_match", "accuracy", 40, 40), proportion("exact_match", "accuracy", 20, 40))
    assert nc is not None and standard_error(nc, +1) == pytest.approx(math.sqrt(0.75 * 0.25 / 20))
    assert margin_p(nc, +1, 0.3) == pytest.approx(0.019434, abs=2e-6)
    # no p to read the se from (d = 0): the interval's better side, (upper - d) / 1.96
    flat = CellTest(0.0, -0.1, 0.2, 1.0, "Newcombe/two-proportion z")
    assert standard_error(flat, +1) == pytest.approx(0.2 / Z95) and standard_error(flat, -1) == pytest.approx(0.1 / Z95)
    # Holm over the judged cells: 0.019434 and Phi(5) -> 2 * 0.019434 = 0.038868, and Phi(5) itself
    raw, adjusted, failing = worse({"a": (nc, 1), "b": (t, 1)}, 0.3, 0.05, HOLM)
    assert raw["a"] == pytest.approx(0.019434, abs=2e-6)
    assert adjusted == pytest.approx({"a": 0.038868, "b": margin_p(t, 1, 0.3)}, abs=4e-6)
    assert failing == ["a"]  # b: z = (-0.1 + 0.3) / 0.04 = 5, nowhere near worse beyond 0.3


MARGIN = 0.05
AT_MARGIN = {name: share - MARGIN for name, share in SHARES.items()}  # every share worse by exactly the margin
TWICE = {name: share - 2 * MARGIN for name, share in SHARES.items()}


def test_the_gate_at_exactly_the_margin_stays_within_its_level():
    """H0 holds at its boundary in all five cells at once (the shares 0.05 lower, latency 0.05 s higher):
    the worst case for the one-sided test, whose false alarms must stay within the level."""
    rate = gate_rate(SHARES, AT_MARGIN, seed=21, n=500, margin=MARGIN, latency=(1.0, 1.0 + MARGIN))
    print(f"worse by exactly the margin {MARGIN}, 5 cells, Holm: the gate failed {rate:.1%} of {REPS} "
          f"(ceiling {NOMINAL_CEILING:.1%})")  # fmt: skip
    assert rate <= NOMINAL_CEILING
    one = gate_rate(SHARES, AT_MARGIN, seed=22, n=500, margin=MARGIN, cells=["accuracy/exact_match"])
    print(f"one cell, exact_match 0.70 -> 0.65 against margin {MARGIN}: {one:.1%} of {REPS} (nominal 5 %)")
    assert one <= NOMINAL_CEILING


def test_the_gate_finds_twice_the_margin():
    rate = gate_rate(SHARES, TWICE, seed=23, n=500, margin=MARGIN, latency=(1.0, 1.0 + 2 * MARGIN))
    one = gate_rate(SHARES, TWICE, seed=24, n=500, margin=MARGIN, cells=["accuracy/exact_match"])
    # one cell: z about (0.10 - 0.05) / 0.0297 = 1.68 against 1.645: about half
    print(f"worse by twice the margin {MARGIN}, 5 cells, Holm: the gate failed {rate:.1%} of {REPS} (power); "
          f"one cell (exact_match 0.70 -> 0.60): {one:.1%}")  # fmt: skip
    assert rate >= 0.5 and one >= 0.35


def test_margin_zero_fails_every_cell_significantly_worse_two_sided():
    """Margin 0 is the cell's own test made one-sided at the level: every share (each count of two windows
    of 10 to 100) and every McNemar table (up to 100 pairs) whose two-sided p is below 5 % on the worse side
    has p_margin = p / 2 < 5 %. (With the Newcombe interval's se instead, 1/10 against 0/40, pooled p 0.043,
    gave 0.051.)"""
    seen = 0
    for n1, n2 in ((10, 10), (20, 20), (10, 40), (40, 10), (100, 100)):
        for x1 in range(n1 + 1):
            for x2 in range(n2 + 1):
                t = difference(proportion("x", "f", x1, n1), proportion("x", "f", x2, n2))
                if t is not None and t.p < 0.05 and t.difference < 0:
                    seen += 1
                    assert margin_p(t, +1, 0.0) == pytest.approx(t.p / 2), (x1, n1, x2, n2)
    for n in (10, 30, 100):
        for only_before in range(n + 1):
            for only_after in range(n + 1 - only_before):
                t = mcnemar(only_before, only_after, 0, n - only_before - only_after)
                if t is not None and t.p < 0.05 and t.difference < 0:
                    seen += 1
                    assert margin_p(t, +1, 0.0) == pytest.approx(t.p / 2), (only_before, only_after, n)
    assert seen > 1000
