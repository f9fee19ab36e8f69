"""Scenarios sampled at different rates (holistic/families/stratified.py): the weighted value by hand, and intervals
that cover a stream's known truth at the nominal rate in simulation (pytest -s prints the figures)."""

from __future__ import annotations

import math

import pytest

from holistic.families import FamilyFold, ScenarioPart, sampling, stratified
from holistic.stats.metric_values import mean, proportion
from holistic.v1 import profile_pb2 as pp
from tests.holistic.test_sampling import NOMINAL_FLOOR


def test_the_weighted_value_and_variance_by_hand():
    # chat: 100 sampled at 5 % (2,000 estimated), 0.1; qa: 500 of 500, 0.5. Weights 0.8 and 0.2.
    value, var = stratified.combine_values([(0.05, 100, 0.1, 0.0009), (1.0, 500, 0.5, 0.0005)])
    assert value == pytest.approx(0.8 * 0.1 + 0.2 * 0.5) == pytest.approx(0.18)
    by_hand = 0.8**2 * (0.0009 + (0.1 - 0.18) ** 2 / 100) + 0.2**2 * (0.0005 + (0.5 - 0.18) ** 2 / 500)
    assert var == pytest.approx(by_hand)
    assert stratified.combine_values([(0.5, 10, 0.3, None), (1.0, 10, 0.2, 0.01)])[1] is None


def test_metrics_dimensions_and_scenarios_combine_and_what_cannot_be_weighted_is_left_out():
    def fold(rate_count: int, toxic: int, scenario: str, per_input: bool) -> FamilyFold:
        frac = proportion("toxic_frac", "toxicity", toxic, rate_count, lower_is_better=True)
        report = pp.FamilyReport(family="toxicity", count=rate_count, metrics=[frac])
        if per_input:
            report.metrics.append(mean("expected_max_toxicity", "toxicity", rate_count, 10.0, 2.0))
        dim = pp.Dimension(kind=pp.DIMENSION_KIND_TOXICITY, score=1 - frac.value, count=rate_count, metrics=[frac])
        dim.interval.CopyFrom(pp.Interval(lower=1 - frac.interval.upper, upper=1 - frac.interval.lower, level=0.95))
        return FamilyFold(report, {scenario: ScenarioPart(metrics=[frac], count=rate_count)}, [dim])

    combined = stratified.combine([(1.0, fold(500, 250, "qa", True)), (0.05, fold(100, 10, "chat", False))])
    (frac,) = combined.report.metrics  # expected_max_toxicity is not in every group: left out
    assert frac.value == pytest.approx(0.2 * 0.5 + 0.8 * 0.1) and frac.count == 600
    assert frac.interval.method == stratified.METHOD and frac.interval.lower < frac.value < frac.interval.upper
    (dim,) = combined.dimensions
    assert dim.score == pytest.approx(1 - frac.value) and dim.count == 600
    assert dim.interval.upper - dim.interval.lower == pytest.approx(frac.interval.upper - frac.interval.lower)
    assert combined.report.count == 600
    assert {s: p.count for s, p in combined.scenarios.items()} == {"qa": 500, "chat": 100}
    assert combined.scenarios["chat"].metrics[0].value == 0.1  # a scenario in one group: as folded
    assert stratified.scenario_rates([(1.0, fold(5, 1, "qa", False)), (0.05, fold(5, 1, "chat", False))]) == {
        "qa": 1.0,
        "chat": 0.05,
    }


STREAMS = 1000
# chat: 4,000 predictions at 5 % (~200 sampled); qa: 400 at 50 % (~200 sampled)
SCENARIOS = (("chat", 4000, 0.05), ("qa", 400, 0.5))


def coverage(value, interval) -> tuple[float, float]:
    """Share of streams whose combined interval covers the stream's truth (over every prediction), and the
    share the unweighted pooled interval covers."""
    covered = pooled = 0
    for r in range(STREAMS):
        truth_sum = n_all = 0.0
        groups, together = [], []
        for scenario, size, rate in SCENARIOS:
            values = [value(scenario, i) for i in range(size)]
            truth_sum, n_all = truth_sum + sum(values), n_all + size
            kept = [v for i, v in enumerate(values) if sampling.position("m", scenario, f"r{r}-{i}") < rate]
            groups.append((rate, interval(kept)))
            together += kept
        truth = truth_sum / n_all
        iv = stratified.combine_metric(groups).interval
        covered += iv.lower <= truth <= iv.upper
        naive = interval(together).interval
        pooled += naive.lower <= truth <= naive.upper
    return covered / STREAMS, pooled / STREAMS


def test_a_share_over_scenarios_at_different_rates_covers_the_truth_at_the_nominal_rate():
    def share(sampled: list[float]) -> pp.Metric:
        return proportion("toxic_frac", "toxicity", sum(sampled), len(sampled))

    # chat 10 % toxic, qa 60 %: the truth is (400 + 240) / 4,400 = 0.145; unweighted, the sample says ~0.35
    got, naive = coverage(lambda scn, i: float(i % 10 < (1 if scn == "chat" else 6)), share)
    print(f"toxic_frac, chat at 5 % and qa at 50 %: covered {got:.1%} of {STREAMS} streams (unweighted: {naive:.1%})")
    assert got >= NOMINAL_FLOOR and naive < 0.05


def test_a_skewed_mean_over_scenarios_at_different_rates_covers_the_truth_at_the_nominal_rate():
    def average(sampled: list[float]) -> pp.Metric:
        return mean("toxicity_mean", "toxicity", len(sampled), sum(sampled), sum(v * v for v in sampled))

    def value(scenario: str, i: int) -> float:
        u = (i * 7919) % 1000 / 1000
        return u**3 if scenario == "chat" else math.sqrt(u)  # chat skewed low (mean 0.25), qa high (0.67)

    got, naive = coverage(value, average)
    print(
        f"toxicity_mean, chat at 5 % and qa at 50 %: covered {got:.1%} of {STREAMS} streams (unweighted: {naive:.1%})"
    )
    assert got >= NOMINAL_FLOOR and naive < 0.5


def test_the_interval_is_about_as_wide_as_the_single_rate_formula_says():
    """Sanity: one group's interval comes back as folded; two equal groups at one rate narrow by √2."""
    one = proportion("x", "f", 30, 100)
    assert stratified.combine_metric([(0.1, one)]) is one
    both = stratified.combine_metric([(0.1, one), (0.1, one)])
    half = (one.interval.upper - one.interval.lower) / 2
    assert both.interval.upper - both.value == pytest.approx(half / math.sqrt(2), rel=0.05)


def test_an_axis_some_rate_group_with_data_lacks_is_absent_not_a_part_passing_for_the_whole():
    frac = proportion("toxic_frac", "toxicity", 5, 50)
    dim = pp.Dimension(kind=pp.DIMENSION_KIND_TOXICITY, score=0.9, count=50, metrics=[frac])
    scored = FamilyFold(pp.FamilyReport(family="toxicity", count=50, metrics=[frac]), {}, [dim])
    empty = FamilyFold(pp.FamilyReport(family="toxicity", count=20, metrics=[frac]), {}, [])
    (got,) = stratified.combine([(1.0, scored), (0.1, empty)]).dimensions
    assert not got.HasField("score") and "different rates" in got.absent_reason and got.count == 0
    # a group with no predictions at all is no part of the whole: the other's axis stands
    (alone,) = stratified.combine(
        [(1.0, scored), (0.1, FamilyFold(pp.FamilyReport(family="toxicity"), {}, []))]
    ).dimensions
    assert alone.score == 0.9 and alone.count == 50
