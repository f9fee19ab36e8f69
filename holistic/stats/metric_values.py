"""Builders for the Metric messages of a profile: one value, its count and its interval."""

from __future__ import annotations

import math

from holistic.stats.intervals import Z95, Moments, mean_of_parts, normal, wilson
from holistic.v1.profile_pb2 import Interval, Metric


def _interval(lower: float, upper: float, method: str) -> Interval | None:
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return None
    return Interval(lower=lower, upper=upper, level=0.95, method=method)


def proportion(name: str, family: str, successes: float, n: float, *, lower_is_better: bool = False) -> Metric:
    """A share of 0/1 outcomes with its Wilson interval."""
    lo, hi = wilson(successes, n, Z95)
    return Metric(
        name=name,
        family=family,
        value=successes / n,
        count=int(n),
        interval=_interval(lo, hi, "wilson"),
        lower_is_better=lower_is_better,
    )


def mean(
    name: str,
    family: str,
    n: float,
    total: float,
    sumsq: float,
    *,
    unit: str = "",
    lower_is_better: bool = False,
    clip: tuple[float, float] | None = None,
) -> Metric:
    """A mean with its normal-approximation interval (absent below two samples)."""
    lo, hi = normal(n, total, sumsq, Z95)
    if clip is not None:
        lo, hi = max(lo, clip[0]), min(hi, clip[1])
    return Metric(
        name=name,
        family=family,
        value=total / n,
        count=int(n),
        interval=_interval(lo, hi, "normal"),
        lower_is_better=lower_is_better,
        unit=unit,
    )


def plain(
    name: str, family: str, value: float, count: float, *, unit: str = "", lower_is_better: bool = False
) -> Metric:
    return Metric(name=name, family=family, value=value, count=int(count), unit=unit, lower_is_better=lower_is_better)


def with_interval(metric: Metric, lower: float, upper: float, method: str) -> Metric:
    interval = _interval(lower, upper, method)
    if interval is not None:
        metric.interval.CopyFrom(interval)
    return metric


def macro_mean(
    name: str,
    family: str,
    parts: list[Moments],
    *,
    count: int | None = None,
    clip: tuple[float, float] = (0.0, 1.0),
    lower_is_better: bool = False,
) -> Metric:
    """The unweighted mean over scenarios of their means (HELM's group cells are means of run means),
    with the interval of `mean_of_parts`; `count`: the predictions behind it unless given."""
    value, lo, hi = mean_of_parts(parts)
    n = int(sum(p[2] for p in parts)) if count is None else count
    m = Metric(name=name, family=family, value=value, count=n, lower_is_better=lower_is_better)
    if lo > float("-inf"):
        m.interval.CopyFrom(Interval(lower=max(lo, clip[0]), upper=min(hi, clip[1]), level=0.95, method="propagated"))
    return m
