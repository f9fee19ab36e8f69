"""The comparison rule (holistic/compare/profiles.py, what CompareProfiles and so the dashboard and every CLI
show): which moves matter, worked by hand."""

from __future__ import annotations

import pytest

from holistic.compare.profiles import compare, previous_range
from holistic.v1 import profile_pb2 as pp


def dim(kind: int, score: float | None, interval: tuple[float, float] | None = None, reason: str = "") -> pp.Dimension:
    d = pp.Dimension(kind=kind, absent_reason=reason)
    if score is not None:
        d.score = score
    if interval is not None:
        d.interval.CopyFrom(pp.Interval(lower=interval[0], upper=interval[1], level=0.95))
    return d


def metric(name: str, value: float, *, unit: str = "", lower: bool = False,
           interval: tuple[float, float] | None = None) -> pp.Metric:  # fmt: skip
    m = pp.Metric(name=name, family="efficiency", value=value, unit=unit, lower_is_better=lower)
    if interval is not None:
        m.interval.CopyFrom(pp.Interval(lower=interval[0], upper=interval[1], level=0.95))
    return m


def profile(dims: list[pp.Dimension], metrics: list[pp.Metric]) -> pp.Profile:
    p = pp.Profile(model="m", dimensions=dims)
    p.families.add(family="efficiency", metrics=metrics)
    return p


def test_previous_range_is_the_equal_span_just_before():
    w = pp.Window(preset=pp.WINDOW_PRESET_LAST_HOUR)
    w.range.start_time.FromSeconds(7_200)
    w.range.end_time.FromSeconds(10_860)  # 61 minutes: a preset resolves to whole minute buckets
    assert previous_range(w) == (3_540, 7_200)  # 7200 - 3660
    assert previous_range(pp.Window(preset=pp.WINDOW_PRESET_ALL_TIME)) is None


def test_moves_that_matter():
    A, E, C = pp.DIMENSION_KIND_ACCURACY, pp.DIMENSION_KIND_EFFICIENCY, pp.DIMENSION_KIND_CALIBRATION
    T = pp.DIMENSION_KIND_TOXICITY
    before = profile(
        [dim(A, 0.70, (0.66, 0.74)), dim(E, 0.90, (0.85, 0.95)), dim(C, 0.80), dim(T, 0.9)],
        [metric("latency_p90", 2.0, unit="s", lower=True, interval=(1.9, 2.1)),
         metric("latency_mean", 1.00, unit="s", lower=True),
         metric("prompt_tokens_mean", 100.0, unit="tokens"),
         metric("prompt_tokens_total", 10_000.0, unit="tokens"),
         metric("within_latency_objective", 0.50)],
    )  # fmt: skip
    after = profile(
        [dim(A, 0.80, (0.77, 0.83)), dim(E, 0.97, (0.94, 0.99)), dim(C, None, reason="no data"), dim(T, 0.93)],
        [metric("latency_p90", 2.5, unit="s", lower=True, interval=(2.3, 2.7)),
         metric("latency_mean", 1.05, unit="s", lower=True),
         metric("prompt_tokens_mean", 80.0, unit="tokens"),
         metric("prompt_tokens_total", 5_000.0, unit="tokens"),
         metric("within_latency_objective", 0.56)],
    )  # fmt: skip
    got = {c.name: c for c in compare(after, before)}
    # accuracy: [0.66, 0.74] and [0.77, 0.83] do not overlap: +0.10, better, matters.
    assert got["accuracy"].delta == pytest.approx(0.10) and got["accuracy"].better and got["accuracy"].matters
    # efficiency: +0.07 but [0.85, 0.95] and [0.94, 0.99] overlap: not a change that matters.
    assert not got["efficiency"].matters and got["efficiency"].why == "within the intervals"
    # calibration lost its data: matters, no direction.
    assert got["calibration"].matters and got["calibration"].better is None and got["calibration"].after is None
    # toxicity has no interval: +0.03 < 0.05: small.
    assert not got["toxicity"].matters
    # latency_p90: [1.9, 2.1] vs [2.3, 2.7] disjoint, up 0.5 s, lower is better: worse.
    p90 = got["efficiency/latency_p90"]
    assert p90.matters and p90.better is False and p90.delta == pytest.approx(0.5)
    # latency_mean: no interval, +5 % < 10 %: small, but still worse in direction.
    assert not got["efficiency/latency_mean"].matters and got["efficiency/latency_mean"].better is False
    # prompt_tokens_mean: -20 % matters; tokens have no better or worse.
    tokens = got["efficiency/prompt_tokens_mean"]
    assert tokens.matters and tokens.better is None
    # within_latency_objective: unitless, +0.06/0.50 = 12 % >= 10 %: better, matters.
    assert got["efficiency/within_latency_objective"].matters and got["efficiency/within_latency_objective"].better
    # volumes are left out.
    assert "efficiency/prompt_tokens_total" not in got


def test_a_move_within_the_absolute_tolerance_is_no_move():
    """BLEU-4 at 2.2e-308 then 2.8e-309 (each a point interval) is 0 then 0, not a significant drop."""
    dust = metric("bleu_4", 2.2e-308, interval=(2.2e-308, 2.2e-308))
    before = profile([dim(pp.DIMENSION_KIND_ACCURACY, 0.5, (0.5, 0.5))], [dust])
    after = profile(
        [dim(pp.DIMENSION_KIND_ACCURACY, 0.5 + 5e-10, (0.5 + 5e-10, 0.5 + 5e-10))],
        [metric("bleu_4", 2.8e-309, interval=(2.8e-309, 2.8e-309))],
    )
    got = {c.name: c for c in compare(after, before)}
    for name in ("efficiency/bleu_4", "accuracy"):
        assert not got[name].matters and got[name].better is None, got[name]
        assert got[name].why == "no move (within 1e-09)"
    # just past the tolerance the intervals decide as before: disjoint, lower, worse
    after.families[0].metrics[0].value = 2.2e-308 - 2e-9
    after.families[0].metrics[0].interval.lower = after.families[0].metrics[0].interval.upper = 2.2e-308 - 2e-9
    moved = {c.name: c for c in compare(after, before)}["efficiency/bleu_4"]
    assert moved.matters and moved.better is False
